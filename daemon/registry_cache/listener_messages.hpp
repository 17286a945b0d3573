#pragma once
// One request on the registry cache's listener and its answer, as the cache
// sees them; the HTTP listener's own (daemon/server/http_handler.hpp) carry
// the same fields, and handlers/registry_port_requests hands them across.

#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "proto/json.hpp"
#include "proto/secret.hpp"
#include "proto/unique_fd.hpp"

namespace hostkeeper::daemon::registry_cache {

struct ListenerRequest {
    std::string target;
    std::string host_header;
    std::optional<proto::Secret> authorization;  // the header's value
    // The first header only a web browser sends (Origin, Sec-Fetch-*), by
    // name; "" when there is none.
    std::string browser_header;
};

struct ListenerResponse {
    unsigned status = 200;
    std::string reason;  // "" for the status's usual reason phrase
    std::string content_type = "application/json";
    std::string body;
    std::vector<std::pair<std::string, std::string>> headers;
    std::optional<proto::UniqueFd> file;  // sent instead of `body`, from offset 0
    // It passed the Host and browser checks: a client of ours (the idle
    // timer counts it), whatever the answer.
    bool authorized = false;
};

// `status` with `body` as JSON.
ListenerResponse json_response(unsigned status, const proto::Json& body);

}  // namespace hostkeeper::daemon::registry_cache
