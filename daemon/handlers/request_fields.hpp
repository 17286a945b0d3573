#pragma once
// A request as the dispatcher hands it to the handler of its family, and
// reading its fields: each checked for its type (and a hostname normalized)
// in one place, every problem a proto::Error with the message the client
// sees (PROTOCOL.md).

#include <cstdint>
#include <optional>
#include <string>

#include "daemon/server/request_handler.hpp"
#include "proto/git_credential.hpp"
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

// A true-or-false field: false when absent. Throws proto::Error{bad_request}
// when it is something else.
bool flag_field(const proto::Json& request, const char* name);
// "refresh": false when absent.
bool refresh_field(const proto::Json& request);

// "constraint", parsed; nullopt when absent.
std::optional<proto::VersionConstraints> constraint_field(const proto::Json& request);

// git_get, git_store, git_erase: "protocol" (https only), "host", "path"
// and "username" (both optional; null is absent), checked and normalized
// (proto/git_credential.hpp).
proto::GitItemKey git_key_fields(const proto::Json& request);
// "password_expiry_utc": decimal Unix seconds as a number or a string;
// nullopt when absent.
std::optional<std::uint64_t> git_expiry_field(const proto::Json& request);

}  // namespace hostkeeper::daemon::handlers
