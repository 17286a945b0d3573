#pragma once
// What hostkeeper-portd's handlers share: the clock of their deadlines, the
// descriptors they wait on, a connection held for a user, and how refusals
// are logged.

#include <sys/types.h>

#include <boost/asio/io_context.hpp>
#include <boost/asio/posix/stream_descriptor.hpp>
#include <chrono>
#include <cstdint>
#include <string_view>
#include <utility>

#include "daemon/portd/budget.hpp"
#include "daemon/portd/port_service.hpp"
#include "proto/unique_fd.hpp"

namespace hostkeeper::daemon::portd {

using Clock = std::chrono::steady_clock;
using Descriptor = boost::asio::posix::stream_descriptor;

// A connection one of the tables holds for a user: the descriptor it waits
// on, whose it is (the uid, and the holder its budgets count it for) and the
// slot it takes of the table's budget, given back when it goes.
struct HeldConnection {
    HeldConnection(boost::asio::io_context& io, int fd, uid_t owner, BudgetHolder holder_of_owner,
                   Budget::Slot taken)
        : descriptor(io, fd), uid(owner), holder(holder_of_owner), slot(std::move(taken)) {}
    Descriptor descriptor;
    uid_t uid;
    BudgetHolder holder;
    Budget::Slot slot;
};

// Refusals are logged the first few times, then at every power of two, with
// the count: a flood cannot flood the journal.
inline bool worth_logging(std::uint64_t count) {
    return count <= 5 || (count & (count - 1)) == 0;
}

// Resets the connection `fd` of `uid` that one of the tables has no room
// for (`what`), and counts it in `counters.refused_full`.
void refuse_full(PortCounters& counters, uid_t uid, proto::UniqueFd fd, std::string_view what);

}  // namespace hostkeeper::daemon::portd
