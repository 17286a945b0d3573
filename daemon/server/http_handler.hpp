#pragma once
// What the HTTP listener asks of whatever answers its requests: one request
// in (what the answer depends on, read from the request's head), one answer
// out. The registry cache answers the registry port's requests; a daemon
// that cannot run with its configuration gives every request one fixed answer.

#include <boost/asio/awaitable.hpp>

#include "daemon/http/listener_exchange.hpp"

namespace hostkeeper::daemon::server {

using HttpRequest = daemon::http::ListenerRequest;
using HttpAnswer = daemon::http::ListenerResponse;

class HttpHandler {
  public:
    HttpHandler() = default;
    HttpHandler(const HttpHandler&) = delete;
    HttpHandler& operator=(const HttpHandler&) = delete;
    virtual ~HttpHandler() = default;

    // Never throws for bad input: every request gets an answer.
    virtual boost::asio::awaitable<HttpAnswer> answer(HttpRequest request) = 0;
};

}  // namespace hostkeeper::daemon::server
