#pragma once
// A request as the dispatcher hands it to the handler of its family, and
// reading its fields: each checked for its type (and a hostname normalized)
// in one place, every problem a proto::Error with the message the client
// sees (PROTOCOL.md).

#include <optional>
#include <string>

#include "daemon/server/request_handler.hpp"
#include "proto/json.hpp"
#include "proto/messages.hpp"
#include "proto/semver.hpp"

namespace hostkeeper::daemon::handlers {

// One request whose version and op are known.
struct Request {
    proto::Op op;
    const proto::Json& fields;
    server::ServerState server;
};

// "host", normalized: never trust the client's normalization, every
// spelling is one entry.
std::string host_field(const proto::Json& request);

// A string field; nullptr when an optional one is absent.
const std::string* text_field(const proto::Json& request, const char* name, bool required);

// "refresh": false when absent.
bool refresh_field(const proto::Json& request);

// "constraint", parsed; nullopt when absent.
std::optional<proto::VersionConstraints> constraint_field(const proto::Json& request);

}  // namespace hostkeeper::daemon::handlers
