#include "daemon/registry_cache/run_ports.hpp"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <spdlog/spdlog.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include <boost/asio/co_spawn.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/local/stream_protocol.hpp>
#include <boost/asio/redirect_error.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <cerrno>
#include <cstring>
#include <string>
#include <utility>

#include "proto/error.hpp"
#include "proto/port_link.hpp"
#include "proto/sock_diag.hpp"
#include "proto/socket_path.hpp"
#include "proto/tcp_listener.hpp"

namespace hostkeeper::daemon::registry_cache {
namespace asio = boost::asio;
namespace fs = std::filesystem;
using boost::system::error_code;
using proto::Error;
using proto::ErrorCode;

struct RunPorts::Run {
    Run(const asio::any_io_executor& io, std::uint64_t number, std::uint16_t on)
        : id(number), port(on), link(io), acceptor(io) {}
    std::uint64_t id;
    std::uint16_t port;
    asio::local::stream_protocol::socket link;
    asio::ip::tcp::acceptor acceptor;
    bool told = false;  // given its host blocks: later changes are news
};

namespace {

// The link must be a socket (not a symlink) in a private directory of ours.
void check_link_path(const fs::path& link) {
    if (!link.is_absolute() || link.filename().empty())
        throw Error(ErrorCode::bad_request, "\"link\" must be an absolute socket path");
    try {
        proto::check_private_directory(link.parent_path(), ::geteuid());
    } catch (const std::exception& e) {
        throw Error(ErrorCode::bad_request, std::string("the run's link: ") + e.what());
    }
    struct stat st {};
    if (::lstat(link.c_str(), &st) != 0 || !S_ISSOCK(st.st_mode))
        throw Error(ErrorCode::bad_request, "the run's link " + link.string() + " is not a socket");
}

// Connects to the run's link without waiting: a link whose queue is full (a
// run that does not accept) cannot be reached, rather than holding the
// event loop.
void connect_link(asio::local::stream_protocol::socket& link, const fs::path& path) {
    const std::string text = path.string();
    const std::optional<sockaddr_un> address = proto::unix_address(path);
    if (!address)
        throw Error(ErrorCode::bad_request, "the run's link " + text + " is too long a path");
    proto::UniqueFd fd(::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0));
    // NOLINTNEXTLINE(cppcoreguidelines-pro-type-reinterpret-cast): the sockets API
    if (fd.get() < 0 ||
        ::connect(fd.get(), reinterpret_cast<const sockaddr*>(&*address), sizeof *address) != 0) {
        throw Error(ErrorCode::bad_request,
                    "the run's link " + text + " cannot be reached: " + std::strerror(errno));
    }
    const int connected = fd.release();
    error_code ec;
    link.assign(asio::local::stream_protocol(), connected, ec);
    if (ec) {
        ::close(connected);
        throw Error(ErrorCode::internal, "the run's link: " + ec.message());
    }
}

// Resets the connection (RST) as it is closed: another uid learns nothing.
void reset(asio::ip::tcp::socket& socket) {
    error_code ignored;
    socket.set_option(asio::socket_base::linger(true, 0), ignored);
    socket.close(ignored);
}

}  // namespace

std::string RunPorts::listener_problem(int fd, std::uint16_t port) {
    std::string problem = proto::loopback_listener_problem(fd);
    if (problem.empty() && proto::bound_port(fd) != port)
        problem = "not on port " + std::to_string(port);
    return problem;
}

void RunPorts::attach(const fs::path& link, std::uint16_t port,
                      std::map<std::string, proto::Secret>&& tokens) {
    if (port == 0) throw Error(ErrorCode::bad_request, "\"port\" must be a TCP port");
    if (!handed_) throw Error(ErrorCode::internal, "this hostkeeperd serves no registry cache");
    check_link_path(link);
    if (diag_.get() < 0) {
        diag_ = proto::UniqueFd(proto::open_sock_diag());
        if (diag_.get() < 0)
            throw Error(ErrorCode::internal,
                        std::string("the kernel's socket lookup: ") + std::strerror(errno));
    }
    auto run = std::make_shared<Run>(io_, next_id_++, port);
    connect_link(run->link, link);
    // The run is the process that listens there: it must be ours.
    try {
        proto::check_peer(run->link.native_handle(), ::geteuid(), link);
    } catch (const proto::UnsafeSocket& e) {
        throw Error(ErrorCode::forbidden, e.what());
    }
    runs_.emplace(run->id, run);
    for (auto& [host, token] : tokens) tokens_.add(run->id, host, std::move(token));
    asio::co_spawn(io_, follow(run), asio::detached);
}

asio::awaitable<void> RunPorts::follow(std::shared_ptr<Run> run) {
    error_code ec;
    co_await run->link.async_wait(asio::socket_base::wait_read,
                                  asio::redirect_error(asio::use_awaitable, ec));
    int received = -1;
    if (!ec && proto::receive_handed_connection(run->link.native_handle(), received) == 1) {
        proto::UniqueFd listener(received);
        const std::string problem = listener_problem(listener.get(), run->port);
        if (!problem.empty()) {
            spdlog::warn("registry cache: a run's socket for port {} is refused: {}", run->port,
                         problem);
        } else {
            run->acceptor.assign(asio::ip::tcp::v4(), listener.release(), ec);
            if (!ec) {
                spdlog::info("registry cache: serving a run's port {}", run->port);
                asio::co_spawn(io_, accept_loop(run), asio::detached);
                // Held until the run closes the link (or sends anything).
                co_await run->link.async_wait(asio::socket_base::wait_read,
                                              asio::redirect_error(asio::use_awaitable, ec));
                spdlog::info("registry cache: the run on port {} has ended", run->port);
            }
        }
    }
    end(run->id);
}

asio::awaitable<void> RunPorts::accept_loop(std::shared_ptr<Run> run) {
    while (run->acceptor.is_open()) {
        error_code ec;
        asio::ip::tcp::socket socket =
            co_await run->acceptor.async_accept(asio::redirect_error(asio::use_awaitable, ec));
        if (ec == asio::error::operation_aborted || !run->acceptor.is_open()) break;
        if (ec) {
            spdlog::warn("registry cache: accepting on a run's port {}: {}", run->port,
                         ec.message());
            asio::steady_timer pause(io_, std::chrono::milliseconds(100));
            co_await pause.async_wait(asio::redirect_error(asio::use_awaitable, ec));
            continue;
        }
        if (!ours(socket)) {
            ++refused_;
            reset(socket);
            continue;
        }
        if (handed_) handed_(std::move(socket));
    }
}

bool RunPorts::ours(asio::ip::tcp::socket& socket) {
    const std::optional<uid_t> uid = proto::connection_owner(diag_.get(), socket.native_handle());
    if (uid == ::geteuid()) return true;
    spdlog::warn(
        "registry cache: reset a connection to a run's port from {}",
        uid ? "uid " + std::to_string(*uid) : std::string("a client the kernel cannot name"));
    return false;
}

void RunPorts::hosts_changed() {
    // One byte on a socket whose reader drains it: it never blocks, and a
    // full buffer already holds the news.
    for (const auto& [id, run] : runs_) {
        if (!run->told || !run->link.is_open()) continue;
        [[maybe_unused]] const ssize_t sent =
            ::send(run->link.native_handle(), "h", 1, MSG_DONTWAIT | MSG_NOSIGNAL);
    }
}

void RunPorts::told(std::uint16_t port) {
    for (const auto& [id, run] : runs_)
        if (run->port == port) run->told = true;
}

bool RunPorts::serves(std::uint16_t port) const {
    for (const auto& [id, run] : runs_)
        if (run->port == port) return true;
    return false;
}

void RunPorts::end(std::uint64_t id) {
    const auto it = runs_.find(id);
    if (it == runs_.end()) return;
    error_code ignored;
    it->second->acceptor.close(ignored);
    it->second->link.close(ignored);
    tokens_.drop(id);
    runs_.erase(it);
}

void RunPorts::stop() {
    while (!runs_.empty()) end(runs_.begin()->first);
}

}  // namespace hostkeeper::daemon::registry_cache
