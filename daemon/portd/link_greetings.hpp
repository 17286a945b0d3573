#pragma once
// The link socket: connections accepted (within their user's budget of
// greetings in flight), their peer's uid taken, and the request line read
// by greeting_deadline: a probe is answered, a registration passed on.

#include <sys/types.h>

#include <boost/asio/io_context.hpp>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <unordered_map>

#include "daemon/portd/budget.hpp"
#include "daemon/portd/deadline_sweep.hpp"
#include "daemon/portd/handler_basics.hpp"
#include "daemon/portd/listener.hpp"
#include "daemon/portd/port_service.hpp"
#include "proto/unique_fd.hpp"

namespace hostkeeper::daemon::portd {

class LinkGreetings {
  public:
    using HolderOf = std::function<BudgetHolder(uid_t)>;
    // A registration request of `uid` read from the link connection `fd`;
    // `socket` as its request named it.
    using Register =
        std::function<void(uid_t uid, BudgetHolder holder, proto::UniqueFd fd, std::string socket)>;

    // `listener`: the link socket, non-blocking. `port`: the registry port,
    // the answer to a probe. Takes the slots of `budget`, counted against
    // `holder_of` each uid.
    LinkGreetings(boost::asio::io_context& io, proto::UniqueFd listener, const PortLimits& limits,
                  std::uint16_t port, Budget& budget, HolderOf holder_of, PortCounters& counters,
                  DeadlineSweep& sweep, Register registration);

    // Starts accepting.
    void start() { listener_.accept(); }

    // Drops the greetings past greeting_deadline; true while some are left.
    bool expire(Clock::time_point now);

  private:
    // A link connection that has not sent its request line yet.
    // Its slot is of budget_.
    struct Greeting : HeldConnection {
        Greeting(boost::asio::io_context& io, int fd, uid_t owner, BudgetHolder holder_of_owner,
                 Clock::time_point until, Budget::Slot taken)
            : HeldConnection(io, fd, owner, holder_of_owner, std::move(taken)), deadline(until) {}
        Clock::time_point deadline;
    };

    void on_link_connection(proto::UniqueFd fd);

    std::unique_ptr<Greeting> take_greeting(std::uint64_t id);

    void bad_greeting(std::unique_ptr<Greeting> greeting, std::string_view why);

    // Reads the request line of greeting `id` once `greeting` has new bytes;
    // a greeting whose connection failed is dropped.
    void wait_greeting(Greeting& greeting, std::uint64_t id);

    // Takes the request line when all of it is there, and not one byte more
    // (peeked first, then read to its newline).
    void read_greeting(std::uint64_t id);

    boost::asio::io_context& io_;
    PortLimits limits_;
    std::uint16_t port_;
    Budget& budget_;
    HolderOf holder_of_;
    PortCounters& counters_;
    DeadlineSweep& sweep_;
    Register register_;
    std::unordered_map<std::uint64_t, std::unique_ptr<Greeting>> greetings_;
    std::uint64_t next_id_ = 0;
    std::uint64_t accept_failures_ = 0;
    // Last: its handlers use the members above.
    Listener listener_;
};

}  // namespace hostkeeper::daemon::portd
