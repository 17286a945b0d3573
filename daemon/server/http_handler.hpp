#pragma once
// What the HTTP listener asks of whatever answers its requests: one request
// in (what the answer depends on, read from the request's head), one answer
// out. The registry cache answers the registry port's requests; a daemon
// that cannot run with its configuration gives every request one fixed answer.

#include <boost/asio/awaitable.hpp>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "proto/secret.hpp"
#include "proto/unique_fd.hpp"

namespace hostkeeper::daemon::server {

struct HttpRequest {
    std::string target;
    std::string host_header;
    std::optional<proto::Secret> authorization;  // the header's value
    // The first header only a web browser sends (Origin, Sec-Fetch-*), by
    // name; "" when there is none.
    std::string browser_header;
};

struct HttpAnswer {
    unsigned status = 200;
    std::string reason;  // "" for the status's usual reason phrase
    std::string content_type = "application/json";
    std::string body;
    std::vector<std::pair<std::string, std::string>> headers;
    std::optional<proto::UniqueFd> file;  // sent instead of `body`, from its offset 0
    // It passed the answerer's checks of who asks: a client of ours (the
    // idle timer counts it), whatever the answer.
    bool authorized = false;
};

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
