#pragma once
// One request on the registry cache's HTTP listener and its answer: what
// the answer depends on, read from the request's head, and what is written
// back. The listener (daemon/registry_cache/http_listener) reads and writes
// them; the registry cache's gate answers them.

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "daemon/http/growing_body.hpp"
#include "proto/secret.hpp"
#include "proto/unique_fd.hpp"

namespace hostkeeper::daemon::http {

struct ListenerRequest {
    std::string target;
    std::string host_header;
    std::optional<proto::Secret> authorization;  // the header's value
    // The first header only a web browser sends (Origin, Sec-Fetch-*), by
    // name; "" when there is none.
    std::string browser_header;
    // The local port of the connection it came on (the registry port, or a
    // run's own); 0 when the socket could not say.
    std::uint16_t local_port = 0;
};

struct ListenerResponse {
    unsigned status = 200;
    std::string reason;  // "" for the status's usual reason phrase
    std::string content_type = "application/json";
    std::string body;
    std::vector<std::pair<std::string, std::string>> headers;
    std::optional<proto::UniqueFd> file;  // sent instead of `body`, from its offset 0
    // Kept until the answer is written (an archive's lease on the store).
    std::shared_ptr<void> hold;
    // With `file`: the body is still being written to it; sent as it grows.
    std::shared_ptr<GrowingBody> growing;
    // It passed the answerer's checks of who asks (Host, browser headers): a
    // client of ours (the idle timer counts it), whatever the answer.
    bool authorized = false;
};

}  // namespace hostkeeper::daemon::http
