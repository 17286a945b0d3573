#include "daemon/portd/handler_basics.hpp"

#include <spdlog/spdlog.h>

#include "daemon/portd/socket_calls.hpp"

namespace hostkeeper::daemon::portd {

void refuse_full(PortCounters& counters, uid_t uid, proto::UniqueFd fd, std::string_view what) {
    ++counters.refused_full;
    if (worth_logging(counters.refused_full))
        spdlog::warn("reset a connection of uid {}: {} ({} such resets so far)", uid, what,
                     counters.refused_full);
    reset_and_close(fd.release());
}

}  // namespace hostkeeper::daemon::portd
