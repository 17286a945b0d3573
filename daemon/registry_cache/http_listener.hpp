#pragma once
// The HTTP/1.1 listener (Boost.Beast) on the connections hostkeeper-portd
// hands over (registry_cache/port_link): only this user's, already checked
// by the kernel's word. Reads each request's head with bounded headers and a
// deadline, hands it to an HttpHandler, writes the answer (a body, a file
// streamed from its descriptor, or a file still downloading, sent as it
// grows: growing_answer.hpp), keeps connections alive as Go's client
// expects, caps how many it serves, and answers every request, a malformed
// one with 400. With a fixed answer instead of a handler, each connection's
// first request (whatever it is) gets that answer and the connection closes.

#include <boost/asio/awaitable.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <chrono>
#include <cstddef>
#include <functional>
#include <memory>
#include <optional>
#include <set>
#include <string>

#include "daemon/registry_cache/http_handler.hpp"

namespace hostkeeper::daemon::registry_cache {

struct ListenerOptions {
    std::size_t max_connections = 256;
    std::chrono::seconds read_timeout{10};  // a whole request's headers
    std::chrono::seconds write_timeout{
        600};  // an archive may be large; a stalled reader is dropped
    // Log messages start with it ("registry cache: ...").
    std::string name = "registry cache";
};

class HttpListener {
  public:
    // `activity` runs for every request whose answer is `authorized` (the
    // daemon's idle timer counts it as a client).
    HttpListener(boost::asio::io_context& io, HttpHandler& handler, ListenerOptions options,
                 std::function<void()> activity);
    // Every request is answered with `fixed` (never a file) and its
    // connection closed; `activity` runs for each.
    HttpListener(boost::asio::io_context& io, ListenerResponse fixed, ListenerOptions options,
                 std::function<void()> activity);
    // Serves one connection until it closes; over the cap it is reset.
    void adopt(boost::asio::ip::tcp::socket socket);
    void stop();

  private:
    struct Connection;
    boost::asio::awaitable<void> serve(std::shared_ptr<Connection> connection);
    boost::asio::awaitable<void> answer_fixed(std::shared_ptr<Connection> connection);

    boost::asio::io_context& io_;
    HttpHandler* handler_ = nullptr;
    std::optional<ListenerResponse> fixed_;
    ListenerOptions options_;
    std::function<void()> activity_;
    // Shared with each connection's coroutine: a frame the io_context
    // destroys after the listener (at shutdown) still removes itself safely.
    std::shared_ptr<std::set<Connection*>> connections_ = std::make_shared<std::set<Connection*>>();
    bool stopping_ = false;
};

}  // namespace hostkeeper::daemon::registry_cache
