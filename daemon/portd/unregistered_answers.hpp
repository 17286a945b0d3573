#pragma once
// Connections whose user's daemon did not register in time: answered 503
// (unregistered_response), then read until their client closes, so that
// closing them does not reset the answer away; reset past the drain bounds.

#include <sys/types.h>

#include <boost/asio/io_context.hpp>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <unordered_map>

#include "daemon/portd/deadline_sweep.hpp"
#include "daemon/portd/handler_basics.hpp"
#include "daemon/portd/port_service.hpp"
#include "proto/unique_fd.hpp"

namespace hostkeeper::daemon::portd {

class UnregisteredAnswers {
  public:
    // Counts in `counters.unregistered`; `sweep` expires the drains.
    UnregisteredAnswers(boost::asio::io_context& io, const PortLimits& limits,
                        PortCounters& counters, DeadlineSweep& sweep)
        : io_(io), limits_(limits), counters_(counters), sweep_(sweep) {}

    void answer(uid_t uid, proto::UniqueFd fd);

    // Resets the drains still open past drain_deadline; true while some are
    // left.
    bool expire(Clock::time_point now);

  private:
    // A connection answered 503, read until its client closes.
    struct Drain {
        Drain(boost::asio::io_context& io, int fd, Clock::time_point until)
            : descriptor(io, fd), deadline(until) {}
        Descriptor descriptor;
        Clock::time_point deadline;
        std::size_t bytes = 0;
    };

    // Reads and drops what `fd` has now; false at its end, on an error or past
    // drain_bytes. `total` counts the bytes.
    bool discard(int fd, std::size_t& total) const;

    void wait_drain(Drain& drain, std::uint64_t id);

    boost::asio::io_context& io_;
    PortLimits limits_;
    PortCounters& counters_;
    DeadlineSweep& sweep_;
    std::unordered_map<std::uint64_t, std::unique_ptr<Drain>> drains_;
    std::uint64_t next_id_ = 0;
};

}  // namespace hostkeeper::daemon::portd
