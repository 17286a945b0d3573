#include "daemon/server/server.hpp"

#include <linux/sockios.h>
#include <spdlog/spdlog.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <unistd.h>

#include <array>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/read.hpp>
#include <boost/asio/redirect_error.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <boost/asio/write.hpp>

#include "daemon/server/passing_write.hpp"
#include "proto/error.hpp"
#include "proto/framing.hpp"
#include "proto/messages.hpp"
#include "proto/secret.hpp"
#include "proto/socket_path.hpp"

namespace hostkeeper::daemon::server {
namespace asio = boost::asio;
using boost::system::error_code;
using proto::ErrorCode;
using stream = asio::local::stream_protocol;

struct Server::Connection : std::enable_shared_from_this<Connection> {
    explicit Connection(Socket s) : socket(std::move(s)), deadline(socket.get_executor()) {}
    Socket socket;
    asio::steady_timer deadline;  // for the read of a request, then for the write of its reply
    bool busy = false;            // a request is being answered: let it finish on stop
    bool writing = false;         // the deadline runs for a reply, not a request
    bool timed_out = false;       // the deadline closed the socket
    std::size_t unread = 0;  // replies written since the client was last seen to have read them all
    pid_t peer_pid = 0;
};

namespace {

auto log_failure(const char* what) {
    return [what](const std::exception_ptr& failure) {
        if (!failure) return;
        try {
            std::rethrow_exception(failure);
        } catch (const std::exception& e) {
            spdlog::error("{} failed: {}", what, e.what());
        }
    };
}

// Bytes the peer has not read yet (SIOCOUTQ); 0 when the kernel does not say.
int unread_bytes(stream::socket& socket) {
    int queued = 0;
    if (::ioctl(socket.native_handle(), SIOCOUTQ, &queued) != 0) return 0;
    return queued;
}

std::string error_frame(ErrorCode code, const std::string& message) {
    return proto::encode_frame(proto::serialize(proto::make_error(code, message)));
}

// Tells a client it will not be served, without waiting for it: one small
// frame into a fresh connection's empty socket buffer never blocks.
void refuse(stream::socket& socket, ErrorCode code, const std::string& message) {
    const std::string frame = error_frame(code, message);
    error_code ignored;
    socket.non_blocking(true, ignored);
    socket.write_some(asio::buffer(frame), ignored);
}

}  // namespace

Server::Server(asio::io_context& io, int listen_fd, RequestHandler& handler,
               const ServerOptions& options, StopHooks hooks)
    : io_(io),
      acceptor_(io, stream(), listen_fd),
      handler_(handler),
      options_(options),
      idle_timer_(io),
      shutdown_timer_(io),
      hooks_(std::move(hooks)) {}

void Server::start() {
    asio::co_spawn(io_, accept_loop(), log_failure("accepting connections"));
    arm_idle_timer();
}

asio::awaitable<void> Server::accept_loop() {
    while (!stopping_) {
        error_code ec;
        Socket socket =
            co_await acceptor_.async_accept(asio::redirect_error(asio::use_awaitable, ec));
        if (ec) {
            if (stopping_ || ec == asio::error::operation_aborted) break;
            spdlog::warn("accept: {}", ec.message());
            // Out of descriptors: back off rather than spin.
            asio::steady_timer pause(io_, std::chrono::milliseconds(100));
            co_await pause.async_wait(asio::use_awaitable);
            continue;
        }
        if (connections_.size() >= options_.max_connections) {
            spdlog::warn("refusing a connection: already serving the maximum of {} connections",
                         options_.max_connections);
            refuse(socket, ErrorCode::busy,
                   "hostkeeperd is serving its maximum of " +
                       std::to_string(options_.max_connections) + " connections; try again");
            continue;  // closed as `socket` goes out of scope
        }
        asio::co_spawn(io_, serve(std::make_shared<Connection>(std::move(socket))),
                       log_failure("a connection"));
    }
}

void Server::arm_deadline(Connection& connection) {
    connection.deadline.expires_after(options_.read_timeout);
    connection.deadline.async_wait([weak = connection.weak_from_this()](const error_code& ec) {
        if (ec) return;
        if (const auto c = weak.lock()) {
            // A wait that expired as its read or write completed, then was
            // re-armed: its handler was already queued. Not this deadline.
            if (c->deadline.expiry() > asio::steady_timer::clock_type::now()) return;
            c->timed_out = true;
            error_code ignored;
            c->socket.close(ignored);
        }
    });
}

asio::awaitable<void> Server::serve(std::shared_ptr<Connection> connection) {
    connections_.insert(connection.get());
    idle_timer_.cancel();

    const std::optional<proto::PeerCredentials> found =
        proto::peer_credentials(connection->socket.native_handle());
    // Unknown: logged as uid -1, never mistaken for root.
    const proto::PeerCredentials peer =
        found.value_or(proto::PeerCredentials{0, static_cast<uid_t>(-1)});
    if (!found || peer.uid != ::geteuid()) {
        spdlog::warn("refused a connection from uid {} (pid {}): only uid {} may use this daemon",
                     peer.uid, peer.pid, ::geteuid());
        refuse(connection->socket, ErrorCode::forbidden,
               "this hostkeeperd serves uid " + std::to_string(::geteuid()) + " only");
    } else {
        spdlog::trace("connection from pid {}", peer.pid);
        connection->peer_pid = peer.pid;
        while (!stopping_) {
            arm_deadline(*connection);
            const bool more = co_await exchange(*connection);
            if (!more) break;
        }
        if (connection->timed_out) {
            spdlog::debug("closed a connection from pid {}: {} within {} s", peer.pid,
                          connection->writing ? "it did not take its reply" : "no complete request",
                          options_.read_timeout.count());
        }
    }

    error_code ignored;
    connection->socket.close(ignored);
    connection->deadline.cancel();
    connections_.erase(connection.get());
    if (connections_.empty()) {
        if (stopping_) {
            finish_stop();
        } else {
            arm_idle_timer();
        }
    }
}

// One request and its response. False when the connection should close.
asio::awaitable<bool> Server::exchange(Connection& connection) {
    error_code ec;
    proto::FrameHeader header{};
    co_await asio::async_read(connection.socket, asio::buffer(header),
                              asio::redirect_error(asio::use_awaitable, ec));
    if (ec) {
        if (ec != asio::error::eof && !connection.timed_out)
            spdlog::debug("reading a request: {}", ec.message());
        co_return false;
    }
    // A client that sends requests without reading the replies would hold
    // its slot (and our memory) for as long as the socket buffer lasts.
    if (unread_bytes(connection.socket) == 0) connection.unread = 0;
    if (connection.unread >= kMaxUnreadReplies) {
        spdlog::warn("closed a connection: {} replies unread, and it sent another request",
                     connection.unread);
        co_return false;
    }
    std::size_t size = 0;
    std::string refusal;
    try {
        size = proto::decode_header(header);
    } catch (const proto::Error& e) {
        spdlog::debug("bad frame header: {}", e.what());
        refusal = error_frame(e.code(), e.what());
    }
    if (!refusal.empty()) {
        // The stream cannot be resynchronized after a bad length: answer and close.
        co_await asio::async_write(connection.socket, asio::buffer(refusal),
                                   asio::redirect_error(asio::use_awaitable, ec));
        co_return false;
    }
    std::string body(size, '\0');
    const proto::ScrubGuard body_guard(body);
    co_await asio::async_read(connection.socket, asio::buffer(body),
                              asio::redirect_error(asio::use_awaitable, ec));
    if (ec) {
        if (!connection.timed_out) spdlog::debug("incomplete request frame: {}", ec.message());
        co_return false;
    }
    connection.deadline.cancel();

    connection.busy = true;
    Reply reply =
        co_await handler_.handle(body, ServerState{connections_.size(), connection.peer_pid});
    proto::scrub(body);
    // Asked to stop: no new connections, idle ones closed; this reply is
    // still written (the connection is busy).
    if (reply.stop) stop();
    const proto::ScrubGuard payload_guard(reply.payload);
    const proto::ScrubGuard tail_guard(reply.tail);
    // Header and parts written as they are, with no copy: a prepared part
    // (Reply::shared) holds no secret and is not scrubbed.
    const proto::FrameHeader frame_header =
        proto::encode_header(reply.size(), proto::kMaxResponseFrameSize);
    const std::string_view shared = reply.shared ? std::string_view(*reply.shared) : "";
    const std::array<asio::const_buffer, 4> frame{asio::buffer(frame_header),
                                                  asio::buffer(reply.payload), asio::buffer(shared),
                                                  asio::buffer(reply.tail)};
    // The reply must be taken within the same timeout as a request.
    connection.writing = true;
    arm_deadline(connection);
    if (reply.file) {
        // Named first.
        auto passing = write_passing(connection.socket, frame, reply.file->fd(), ec);
        co_await std::move(passing);
    } else {
        co_await asio::async_write(connection.socket, frame,
                                   asio::redirect_error(asio::use_awaitable, ec));
    }
    connection.deadline.cancel();
    connection.busy = false;
    if (ec) co_return false;
    connection.writing = false;
    ++connection.unread;
    co_return true;
}

void Server::arm_idle_timer() {
    if (options_.idle_timeout.count() == 0 || stopping_) return;
    idle_timer_.expires_after(options_.idle_timeout);
    idle_timer_.async_wait([this](const error_code& ec) {
        if (ec || !connections_.empty() || stopping_) return;
        if (busy_ && busy_()) {
            arm_idle_timer();
        } else if (on_idle_) {
            on_idle_();
        }
    });
}

void Server::activity() {
    if (connections_.empty()) arm_idle_timer();
}

void Server::stop() {
    if (stopping_) return;
    stopping_ = true;
    if (hooks_.stopping) hooks_.stopping();
    error_code ignored;
    acceptor_.close(ignored);
    idle_timer_.cancel();
    for (Connection* connection : connections_) {
        if (!connection->busy) connection->socket.close(ignored);
    }
    if (connections_.empty()) {
        asio::post(io_, [this] { finish_stop(); });
        return;
    }
    spdlog::info("waiting up to {} s for {} connection(s) to finish",
                 options_.shutdown_timeout.count(), connections_.size());
    shutdown_timer_.expires_after(options_.shutdown_timeout);
    shutdown_timer_.async_wait([this](const error_code& ec) {
        if (ec) return;
        spdlog::warn("{} connection(s) still busy after {} s; stopping anyway", connections_.size(),
                     options_.shutdown_timeout.count());
        finish_stop();
    });
}

void Server::finish_stop() {
    shutdown_timer_.cancel();
    if (auto callback = std::move(hooks_.stopped)) {
        hooks_.stopped = nullptr;
        callback();
    }
}

}  // namespace hostkeeper::daemon::server
