#include "daemon/registry_cache/port_link.hpp"

#include <spdlog/spdlog.h>
#include <sys/socket.h>
#include <systemd/sd-daemon.h>
#include <unistd.h>

#include <algorithm>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/redirect_error.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <cerrno>
#include <cstring>
#include <memory>
#include <optional>
#include <utility>

#include "daemon/async/on_worker.hpp"
#include "proto/port_link.hpp"

namespace hostkeeper::daemon::registry_cache {
namespace asio = boost::asio;
using boost::system::error_code;

PortLink::PortLink(asio::io_context& io, asio::any_io_executor worker, std::filesystem::path socket,
                   PortEvents events, Handed handed, std::string own_socket)
    : io_(io),
      worker_(std::move(worker)),
      socket_(std::move(socket)),
      events_(std::move(events)),
      handed_(std::move(handed)),
      retry_(io),
      own_socket_(std::move(own_socket)) {}

std::chrono::seconds PortLink::next_held_pause(std::chrono::seconds previous) {
    if (previous < kHeldRetryFirst) return kHeldRetryFirst;
    return std::min(previous * 2, std::chrono::seconds(kHeldRetryMax));
}

proto::PortConnection PortLink::connect(const std::filesystem::path& service,
                                        const std::string& own_socket) {
    return proto::connect_port_service(service, proto::PortVerb::register_user, kConnectTimeout,
                                       own_socket);
}

void PortLink::start() {
    try {
        proto::PortConnection connection = connect(socket_, own_socket_);
        connected(connection.fd.release(), connection.port);
    } catch (const proto::PortServiceError& e) {
        failed(e);
    }
    asio::co_spawn(io_, follow(), asio::detached);
}

void PortLink::failed(const proto::PortServiceError& error) {
    const std::string failure = error.what();
    if (const auto* held = dynamic_cast<const proto::PortHeldElsewhere*>(&error)) {
        // Said once per holder; the pauses grow until the holder is gone.
        if (!holder_ || !(*holder_ == held->holder)) {
            spdlog::warn(
                "registry cache: another hostkeeperd of this user holds the registry port "
                "(pid {}, socket {}); this one ({}) leaves the port and the tfrc files to it "
                "and asks again after pauses growing to {} s. Two daemons run because their "
                "clients resolve different sockets: stop one (hostkeeper --socket SOCKET stop)",
                held->holder.pid, held->holder.socket.empty() ? "?" : held->holder.socket,
                own_socket_.empty() ? "its socket unknown" : own_socket_, kHeldRetryMax.count());
        }
        holder_ = held->holder;
        last_failure_ = failure;
        pause_ = next_held_pause(pause_);
        if (events_.held_elsewhere) events_.held_elsewhere(held->holder);
        return;
    }
    holder_.reset();
    if (failure != last_failure_) {
        spdlog::warn(
            "registry cache: no registry port: {}; the tfrc files carry no blocks until there "
            "is; trying again every {} s",
            failure, kRetry.count());
    }
    last_failure_ = failure;
    pause_ = kRetry;
    if (events_.unavailable) events_.unavailable(failure);
}

void PortLink::stop() {
    stopped_ = true;
    error_code ignored;
    retry_.cancel();
    if (link_) link_->close(ignored);
}

void PortLink::connected(int fd, std::uint16_t port) {
    last_failure_.clear();
    holder_.reset();
    pause_ = std::chrono::seconds(0);
    link_.emplace(io_, fd);
    error_code ignored;
    link_->non_blocking(true, ignored);
    port_ = port;
    if (events_.registered) events_.registered(port);
    spdlog::info("registry cache: registered with hostkeeper-portd ({}): 127.0.0.1:{}",
                 socket_.string(), port);
}

bool PortLink::take_connections() {
    for (;;) {
        int fd = -1;
        const int got = proto::receive_handed_connection(link_->native_handle(), fd);
        if (got == 1) {
            // Only what the service may hand over: a connected TCP socket on the registry port.
            if (sd_is_socket_inet(fd, AF_UNSPEC, SOCK_STREAM, 0, port_) <= 0) {
                spdlog::warn(
                    "registry cache: hostkeeper-portd handed over something else than "
                    "a connection to the registry port: closed");
                ::close(fd);
                continue;
            }
            sockaddr_storage local{};
            socklen_t length = sizeof local;
            // NOLINTNEXTLINE(cppcoreguidelines-pro-type-reinterpret-cast): the sockets API
            ::getsockname(fd, reinterpret_cast<sockaddr*>(&local), &length);
            asio::ip::tcp::socket socket(io_);
            error_code ec;
            socket.assign(local.ss_family == AF_INET6 ? asio::ip::tcp::v6() : asio::ip::tcp::v4(),
                          fd, ec);
            if (ec) {
                ::close(fd);
                continue;
            }
            handed_(std::move(socket));
            continue;
        }
        if (got < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) return true;
        ended_ = got == 0
                     ? std::string("hostkeeper-portd closed the link")
                     : std::string("the link to hostkeeper-portd failed: ") + std::strerror(errno);
        return false;
    }
}

asio::awaitable<void> PortLink::follow() {
    while (!stopped_) {
        if (link_) {
            error_code ec;
            co_await link_->async_wait(asio::posix::stream_descriptor::wait_read,
                                       asio::redirect_error(asio::use_awaitable, ec));
            if (stopped_) break;
            if (!ec && take_connections()) continue;
            if (ec) ended_ = "the link to hostkeeper-portd failed: " + ec.message();
            error_code ignored;
            link_->close(ignored);
            link_.reset();
            spdlog::warn("registry cache: {}; registering again", ended_);
            if (events_.lost) events_.lost(ended_);
        }
        if (pause_.count() > 0) {
            retry_.expires_after(pause_);
            error_code ignored;
            co_await retry_.async_wait(asio::redirect_error(asio::use_awaitable, ignored));
            if (stopped_) break;
        }
        std::optional<proto::PortHeldElsewhere> held;
        std::optional<proto::PortServiceError> failure;
        try {
            // Copies: the worker may still run while this object goes.
            auto connecting = async::on_worker(worker_, [path = socket_, own = own_socket_] {
                return std::make_shared<proto::PortConnection>(connect(path, own));
            });
            const std::shared_ptr<proto::PortConnection> connection =
                co_await std::move(connecting);
            if (stopped_) break;
            connected(connection->fd.release(), connection->port);
            continue;
        } catch (const proto::PortHeldElsewhere& e) {
            held.emplace(e);
        } catch (const std::exception& e) {
            failure.emplace(e.what());
        }
        if (stopped_) break;
        if (held) {
            failed(*held);
        } else {
            failed(*failure);
        }
    }
}

}  // namespace hostkeeper::daemon::registry_cache
