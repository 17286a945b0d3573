#pragma once
// Requests and responses: JSON objects, one per frame. See proto/PROTOCOL.md.

#include <cstddef>
#include <optional>
#include <string>
#include <string_view>

#include "proto/error.hpp"
#include "proto/framing.hpp"
#include "proto/json.hpp"

namespace hostkeeper::proto {

enum class Op {
    hello,
    get,
    store,
    forget,
    status,
    flush,
    stop,
    discover,
    module_versions,
    module_download,
    provider_versions,
    provider_package,
    provider_fetch,
    registry_cache_sync,
    registry_run,
    registry_run_blocks,
    migrate,
    unlock,
    list,
    check,
    rotate,
    login_start,
    login_exchange,
    login_refresh,
    docker_get,
    docker_store,
    docker_erase,
    docker_list,
    git_get,
    git_store,
    git_erase,
};
std::string_view to_string(Op op) noexcept;
std::optional<Op> op_from_string(std::string_view text) noexcept;

// The largest credentials object (compact JSON) the daemon keeps: it must fit
// in one frame together with the request around it.
inline constexpr std::size_t kMaxCredentialsSize = std::size_t{60} * 1024;

// {"v":<kProtocolVersion>,"op":"<op>"}
Json make_request(Op op);
// {"v":..,"ok":true}
Json make_ok();
// {"v":..,"ok":false,"error":{"code":"..","message":".."}}
Json make_error(ErrorCode code, std::string_view message);

// Parse one frame's payload. Throws Error{bad_request} unless it is a JSON
// object nested at most kMaxJsonDepth levels.
Json parse_payload(std::string_view payload);
// Serialize for a frame. Throws Error{too_large} past `limit` (requests:
// kMaxFrameSize; the daemon's responses: kMaxResponseFrameSize).
std::string serialize(const Json& message, std::size_t limit = kMaxFrameSize);

// A response's error, rethrown as Error; a malformed response is
// Error{bad_request}. Returns the response when it says "ok": true.
const Json& check_response(const Json& response);

// Validate a credentials object as Terraform hands it to a helper's `store`:
// a JSON object whose "token", when present, is a string. Throws
// Error{bad_request} or Error{too_large} with a message for the user.
Json parse_credentials(std::string_view text);
void validate_credentials(const Json& credentials);

// Docker credentials (docker-credential-hostkeeper): the key is the server
// URL exactly as the Docker client gave it ("registry.example.com:5000",
// "https://index.docker.io/v1/"), with surrounding blanks dropped. Throws
// Error{bad_request} when it is empty, over kMaxDockerServerSize bytes, or
// holds control characters.
inline constexpr std::size_t kMaxDockerServerSize = 1024;
inline constexpr std::size_t kMaxDockerUsernameSize = 1024;
std::string docker_server_key(std::string_view server);

// The other spelling of a registry's server URL, asked for when nothing is
// stored under the one given: Docker and Podman name a registry by its host
// ("registry.example.com:5000"), OpenTofu asks for "https://" and the host.
// "https://HOST[:PORT]" (with or without a final "/") gives "HOST[:PORT]",
// and a key without "/" gives "https://" + key; anything else (another
// scheme, a path such as Docker Hub's "https://index.docker.io/v1/") has
// none. The result is a valid key (docker_server_key).
std::optional<std::string> other_docker_server(std::string_view key);

}  // namespace hostkeeper::proto
