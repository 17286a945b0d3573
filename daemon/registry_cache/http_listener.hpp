#pragma once
// The registry cache's loopback HTTP/1.1 listener (Boost.Beast): reads each
// request with bounded headers and a deadline, hands it to RegistryCache,
// writes the answer (a body, or an archive streamed from its file), keeps
// connections alive as Go's client expects, caps how many it serves, and
// closes at once a connection from another user's process (tcp_peer).

#include <boost/asio/awaitable.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <chrono>
#include <cstddef>
#include <functional>
#include <memory>
#include <set>

#include "daemon/registry_cache/registry_cache.hpp"

namespace hostkeeper::daemon::registry_cache {

struct ListenerOptions {
    std::size_t max_connections = 256;
    std::chrono::seconds read_timeout{10};  // a whole request's headers
    std::chrono::seconds write_timeout{
        600};  // an archive may be large; a stalled reader is dropped
};

// Binds `address`:`port` (SO_REUSEADDR) and listens; returns the fd, or -1
// with `error` set (the port is taken: someone else holds it).
int bind_loopback(const std::string& address, std::uint16_t port, std::string& error);

// Whether `fd` is a listening TCP socket bound to `port` on IPv4.
bool is_listener_on(int fd, std::uint16_t port);

class HttpListener {
  public:
    // Takes ownership of `listen_fd`. `activity` runs for every request (the
    // daemon's idle timer counts it as a client).
    HttpListener(boost::asio::io_context& io, int listen_fd, RegistryCache& cache,
                 ListenerOptions options, std::function<void()> activity);
    void start();
    void stop();

  private:
    struct Connection;
    boost::asio::awaitable<void> accept_loop();
    boost::asio::awaitable<void> serve(std::shared_ptr<Connection> connection);

    boost::asio::io_context& io_;
    boost::asio::ip::tcp::acceptor acceptor_;
    RegistryCache& cache_;
    ListenerOptions options_;
    std::function<void()> activity_;
    // Shared with each connection's coroutine: a frame the io_context
    // destroys after the listener (at shutdown) still removes itself safely.
    std::shared_ptr<std::set<Connection*>> connections_ = std::make_shared<std::set<Connection*>>();
    bool stopping_ = false;
    std::uint64_t foreign_ = 0;  // connections refused: another user's
};

}  // namespace hostkeeper::daemon::registry_cache
