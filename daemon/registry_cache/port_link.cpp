#include "daemon/registry_cache/port_link.hpp"

#include <spdlog/spdlog.h>
#include <sys/socket.h>
#include <systemd/sd-daemon.h>
#include <unistd.h>

#include <boost/asio/co_spawn.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/redirect_error.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <cerrno>
#include <cstring>
#include <memory>
#include <utility>

#include "daemon/async/on_worker.hpp"
#include "proto/port_link.hpp"

namespace hostkeeper::daemon::registry_cache {
namespace asio = boost::asio;
using boost::system::error_code;

PortLink::PortLink(asio::io_context& io, asio::any_io_executor worker, std::filesystem::path socket,
                   PortEvents events, Handed handed)
    : io_(io),
      worker_(std::move(worker)),
      socket_(std::move(socket)),
      events_(std::move(events)),
      handed_(std::move(handed)),
      retry_(io) {}

void PortLink::start() {
    try {
        proto::PortConnection connection =
            proto::connect_port_service(socket_, proto::PortVerb::register_user, kConnectTimeout);
        connected(connection.fd.release(), connection.port);
    } catch (const proto::PortServiceError& e) {
        last_failure_ = e.what();
        spdlog::error(
            "registry cache: no registry port: {}; the tfrc files carry no blocks until there is",
            e.what());
        if (events_.unavailable) events_.unavailable(e.what());
    }
    asio::co_spawn(io_, follow(), asio::detached);
}

void PortLink::stop() {
    stopped_ = true;
    error_code ignored;
    retry_.cancel();
    if (link_) link_->close(ignored);
}

void PortLink::connected(int fd, std::uint16_t port) {
    last_failure_.clear();
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
        std::string failure;
        try {
            auto connecting = async::on_worker(worker_, [path = socket_] {
                return std::make_shared<proto::PortConnection>(proto::connect_port_service(
                    path, proto::PortVerb::register_user, kConnectTimeout));
            });
            const std::shared_ptr<proto::PortConnection> connection =
                co_await std::move(connecting);
            if (stopped_) break;
            connected(connection->fd.release(), connection->port);
            continue;
        } catch (const std::exception& e) {
            failure = e.what();
        }
        if (stopped_) break;
        if (events_.unavailable) events_.unavailable(failure);
        if (failure != last_failure_) {
            spdlog::warn("registry cache: no registry port: {}; trying again every {} s", failure,
                         kRetry.count());
        }
        last_failure_ = failure;
        retry_.expires_after(kRetry);
        error_code ignored;
        co_await retry_.async_wait(asio::redirect_error(asio::use_awaitable, ignored));
    }
}

}  // namespace hostkeeper::daemon::registry_cache
