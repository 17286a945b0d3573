#pragma once
// What the HTTP listener asks of whatever answers its requests: one request
// in (what the answer depends on, read from the request's head), one answer
// out. The gate answers the registry cache's requests.

#include <boost/asio/awaitable.hpp>

#include "daemon/registry_cache/listener_messages.hpp"

namespace hostkeeper::daemon::registry_cache {

class HttpHandler {
  public:
    HttpHandler() = default;
    HttpHandler(const HttpHandler&) = delete;
    HttpHandler& operator=(const HttpHandler&) = delete;
    virtual ~HttpHandler() = default;

    // Never throws for bad input: every request gets an answer.
    virtual boost::asio::awaitable<ListenerResponse> answer(ListenerRequest request) = 0;
};

}  // namespace hostkeeper::daemon::registry_cache
