#pragma once
// What hostkeeper-portd's handlers share: the clock of their deadlines, the
// descriptors they wait on, and how refusals are logged.

#include <sys/types.h>

#include <boost/asio/posix/stream_descriptor.hpp>
#include <chrono>
#include <cstdint>
#include <string_view>

#include "daemon/portd/port_service.hpp"
#include "proto/unique_fd.hpp"

namespace hostkeeper::daemon::portd {

using Clock = std::chrono::steady_clock;
using Descriptor = boost::asio::posix::stream_descriptor;

// Refusals are logged the first few times, then at every power of two, with
// the count: a flood cannot flood the journal.
inline bool worth_logging(std::uint64_t count) {
    return count <= 5 || (count & (count - 1)) == 0;
}

// Resets the connection `fd` of `uid` that one of the tables has no room
// for (`what`), and counts it in `counters.refused_full`.
void refuse_full(PortCounters& counters, uid_t uid, proto::UniqueFd fd, std::string_view what);

}  // namespace hostkeeper::daemon::portd
