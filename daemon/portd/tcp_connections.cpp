#include "daemon/portd/tcp_connections.hpp"

#include <spdlog/spdlog.h>
#include <sys/socket.h>

#include <optional>
#include <utility>

#include "daemon/portd/socket_calls.hpp"
#include "proto/sock_diag.hpp"

namespace hostkeeper::daemon::portd {

TcpIntake::TcpIntake(boost::asio::io_context& io, std::vector<proto::UniqueFd> listeners,
                     proto::UniqueFd netlink, std::size_t accepts_per_turn, PortCounters& counters,
                     Deliver deliver)
    : netlink_(std::move(netlink)), counters_(counters), deliver_(std::move(deliver)) {
    for (proto::UniqueFd& fd : listeners)
        listeners_.push_back(std::make_unique<Listener>(io, std::move(fd), accepts_per_turn,
                                                        "registry port", accept_failures_,
                                                        [this](proto::UniqueFd accepted) {
                                                            ++counters_.accepted;
                                                            on_connection(std::move(accepted));
                                                        }));
}

void TcpIntake::start() {
    for (auto& listener : listeners_) listener->accept();
}

void TcpIntake::on_connection(proto::UniqueFd fd) {
    const std::optional<uid_t> uid = proto::connection_owner(netlink_.get(), fd.get());
    if (!uid) {
        ++counters_.refused_unknown_owner;
        if (worth_logging(counters_.refused_unknown_owner))
            spdlog::warn("reset a connection whose owner the kernel does not name ({} so far)",
                         counters_.refused_unknown_owner);
        reset_and_close(fd.release());
        return;
    }
    deliver_(*uid, std::move(fd));
}

}  // namespace hostkeeper::daemon::portd
