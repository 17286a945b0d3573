#pragma once
// The socket server: accepts on the listening socket, serves each connection
// in its own coroutine (one frame in, one frame out, repeated), refuses peers
// of another uid, bounds every read with a deadline and the number of
// connections with a cap, and stops gracefully.

#include <boost/asio/awaitable.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/local/stream_protocol.hpp>
#include <boost/asio/steady_timer.hpp>
#include <chrono>
#include <cstddef>
#include <functional>
#include <memory>
#include <unordered_set>
#include <utility>

#include "daemon/server/request_handler.hpp"

namespace hostkeeper::daemon::server {

// A connection whose client has this many replies unread when it sends
// another request is closed (PROTOCOL.md, "Transport").
inline constexpr std::size_t kMaxUnreadReplies = 16;

struct ServerOptions {
    std::size_t max_connections = 128;
    std::chrono::seconds read_timeout{
        5};  // for each request, and for the client to take each reply
    std::chrono::seconds shutdown_timeout{5};
    std::chrono::seconds idle_timeout{0};  // 0: never report idleness
};

// What stopping means around the server: `stopping` runs as the stop
// begins (the daemon fails its fetches in flight, so that their clients get
// an answer now), `stopped` once every connection is done (the daemon ends
// its event loop).
struct StopHooks {
    std::function<void()> stopping;
    std::function<void()> stopped;
};

class Server {
  public:
    // Takes ownership of `listen_fd`, a listening Unix stream socket.
    Server(boost::asio::io_context& io, int listen_fd, RequestHandler& handler,
           const ServerOptions& options, StopHooks hooks = {});

    void start();
    // Stops accepting, closes idle connections, lets requests in flight
    // finish (at most shutdown_timeout), then runs the `stopped` hook once.
    // A reply that asks for it (Reply::stop) stops the server too, once it
    // is written. Idempotent.
    void stop();
    // Called when no client has been connected for idle_timeout and
    // `busy` (see stay_while) is false.
    void on_idle(std::function<void()> callback) { on_idle_ = std::move(callback); }
    // While `busy` returns true (a run's port is being served), idle_timeout
    // passing starts it again instead of calling on_idle.
    void stay_while(std::function<bool()> busy) { busy_ = std::move(busy); }

    // Another kind of client (the registry cache's listener) was served: the
    // idle timeout starts again.
    void activity();

    std::size_t connections() const { return connections_.size(); }

  private:
    struct Connection;
    using Socket = boost::asio::local::stream_protocol::socket;

    boost::asio::awaitable<void> accept_loop();
    boost::asio::awaitable<void> serve(std::shared_ptr<Connection> connection);
    boost::asio::awaitable<bool> exchange(Connection& connection);
    void arm_deadline(Connection& connection);
    void arm_idle_timer();
    void finish_stop();

    boost::asio::io_context& io_;
    boost::asio::local::stream_protocol::acceptor acceptor_;
    RequestHandler& handler_;
    ServerOptions options_;
    std::unordered_set<Connection*> connections_;
    boost::asio::steady_timer idle_timer_;
    boost::asio::steady_timer shutdown_timer_;
    std::function<void()> on_idle_;
    std::function<bool()> busy_;
    StopHooks hooks_;
    bool stopping_ = false;
};

}  // namespace hostkeeper::daemon::server
