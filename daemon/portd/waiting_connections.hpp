#pragma once
// Connections waiting for their user's daemon to register: held (within
// their user's budget), given back once it does, or answered 503
// (UnregisteredAnswers) when it does not in time.

#include <sys/types.h>

#include <deque>
#include <functional>
#include <utility>

#include "daemon/portd/budget.hpp"
#include "daemon/portd/deadline_sweep.hpp"
#include "daemon/portd/handler_basics.hpp"
#include "daemon/portd/port_service.hpp"
#include "daemon/portd/unregistered_answers.hpp"
#include "proto/unique_fd.hpp"

namespace hostkeeper::daemon::portd {

class WaitingRoom {
  public:
    using HolderOf = std::function<BudgetHolder(uid_t)>;
    using Deliver = std::function<void(uid_t, proto::UniqueFd)>;

    // Takes the slots of `budget`, counted against `holder_of` each uid;
    // refusals count in `counters`. `deliver` takes the connections of a
    // user whose daemon registered.
    WaitingRoom(const PortLimits& limits, Budget& budget, HolderOf holder_of,
                PortCounters& counters, DeadlineSweep& sweep, UnregisteredAnswers& answers,
                Deliver deliver)
        : limits_(limits),
          budget_(budget),
          holder_of_(std::move(holder_of)),
          counters_(counters),
          sweep_(sweep),
          answers_(answers),
          deliver_(std::move(deliver)) {}

    // Holds the connection `fd` of `uid` for pending_wait, or resets it when
    // the budget has no room.
    void hold(uid_t uid, proto::UniqueFd fd);

    // Delivers the connections of `uid` (its daemon registered).
    void release(uid_t uid);

    // Answers the connections held past pending_wait; true while some are
    // held.
    bool expire(Clock::time_point now);

  private:
    struct Pending {
        uid_t uid = 0;
        proto::UniqueFd fd{-1};
        Clock::time_point deadline;
        Budget::Slot slot;
    };

    PortLimits limits_;
    Budget& budget_;
    HolderOf holder_of_;
    PortCounters& counters_;
    DeadlineSweep& sweep_;
    UnregisteredAnswers& answers_;
    Deliver deliver_;
    std::deque<Pending> pending_;  // in arrival order: deadlines ascend
};

}  // namespace hostkeeper::daemon::portd
