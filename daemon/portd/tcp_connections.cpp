// The registry port's TCP connections: accepted, their owner asked of the
// kernel, then handed to that user's daemon, held for it, or reset.

#include <spdlog/spdlog.h>
#include <sys/socket.h>

#include <boost/asio/post.hpp>
#include <cerrno>
#include <cstring>
#include <optional>

#include "daemon/portd/port_state.hpp"
#include "daemon/portd/socket_calls.hpp"
#include "proto/sock_diag.hpp"

namespace hostkeeper::daemon::portd {

namespace asio = boost::asio;

void PortService::Impl::wait_tcp(TcpListener& listener) {
    listener.descriptor.async_wait(
        Descriptor::wait_read, [this, &listener](const boost::system::error_code& ec) {
            if (ec == asio::error::operation_aborted) return;
            if (ec) {
                spdlog::error("registry port listener: {}", ec.message());
                pause_tcp(listener);
                return;
            }
            accept_tcp(listener);
        });
}

void PortService::Impl::pause_tcp(TcpListener& listener) {
    listener.pause.expires_after(kAcceptPause);
    listener.pause.async_wait([this, &listener](const boost::system::error_code& ec) {
        if (!ec) accept_tcp(listener);
    });
}

void PortService::Impl::accept_tcp(TcpListener& listener) {
    for (std::size_t i = 0; i < limits.accepts_per_turn; ++i) {
        // Blocking like a plain accept(): the daemon gets the descriptor as
        // it would have accepted it; this side uses MSG_DONTWAIT only.
        const int fd =
            ::accept4(listener.descriptor.native_handle(), nullptr, nullptr, SOCK_CLOEXEC);
        if (fd >= 0) {
            ++counters.accepted;
            on_connection(UniqueFd(fd));
            continue;
        }
        if (errno == EINTR || errno == ECONNABORTED) continue;
        if (would_block(errno)) {
            wait_tcp(listener);
            return;
        }
        static std::uint64_t failures = 0;
        if (worth_logging(++failures))
            spdlog::error("registry port: accept: {} ({} times)", std::strerror(errno), failures);
        pause_tcp(listener);
        return;
    }
    asio::post(io, [this, &listener] { accept_tcp(listener); });
}

void PortService::Impl::on_connection(UniqueFd fd) {
    sockaddr_storage local{};
    sockaddr_storage peer{};
    std::optional<uid_t> uid;
    if (local_address(fd.get(), local) && peer_address(fd.get(), peer))
        uid = proto::peer_uid(netlink.get(), local, peer);
    if (!uid) {
        ++counters.refused_unknown_owner;
        if (worth_logging(counters.refused_unknown_owner))
            spdlog::warn("reset a connection whose owner the kernel does not name ({} so far)",
                         counters.refused_unknown_owner);
        reset_and_close(fd.release());
        return;
    }
    deliver(*uid, std::move(fd));
}

void PortService::Impl::deliver(uid_t uid, UniqueFd fd) {
    const auto found = links.find(uid);
    if (found != links.end()) {
        hand(*found->second, std::move(fd));
    } else {
        hold(uid, std::move(fd));
    }
}

void PortService::Impl::refuse_full(uid_t uid, UniqueFd fd, std::string_view what) {
    ++counters.refused_full;
    if (worth_logging(counters.refused_full))
        spdlog::warn("reset a connection of uid {}: {} ({} such resets so far)", uid, what,
                     counters.refused_full);
    reset_and_close(fd.release());
}

}  // namespace hostkeeper::daemon::portd
