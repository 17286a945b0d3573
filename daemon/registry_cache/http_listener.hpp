#pragma once
// The registry cache's HTTP/1.1 listener (Boost.Beast) on the connections
// hostkeeper-portd hands over (PortLink): only this user's, already checked
// by the kernel's word. Reads each request with bounded headers and a
// deadline, hands it to RegistryCache, writes the answer (a body, or an
// archive streamed from its file), keeps connections alive as Go's client
// expects, caps how many it serves, and answers every request, a malformed
// one with 400.

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

class HttpListener {
  public:
    // `activity` runs for every request that passed the Host and browser
    // checks (the daemon's idle timer counts it as a client).
    HttpListener(boost::asio::io_context& io, RegistryCache& cache, ListenerOptions options,
                 std::function<void()> activity);
    // Serves one connection until it closes; over the cap it is reset.
    void adopt(boost::asio::ip::tcp::socket socket);
    void stop();

  private:
    struct Connection;
    boost::asio::awaitable<void> serve(std::shared_ptr<Connection> connection);

    boost::asio::io_context& io_;
    RegistryCache& cache_;
    ListenerOptions options_;
    std::function<void()> activity_;
    // Shared with each connection's coroutine: a frame the io_context
    // destroys after the listener (at shutdown) still removes itself safely.
    std::shared_ptr<std::set<Connection*>> connections_ = std::make_shared<std::set<Connection*>>();
    bool stopping_ = false;
};

}  // namespace hostkeeper::daemon::registry_cache
