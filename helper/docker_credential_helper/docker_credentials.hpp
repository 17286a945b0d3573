#pragma once
// The Docker credential helper protocol's data (docker/docker-credential-helpers):
// what `store`, `get` and `erase` read on standard input and what `get` and
// `list` print, as the upstream helpers read and write them. No I/O here.

#include <string>
#include <string_view>

#include "proto/json.hpp"
#include "proto/secret.hpp"

namespace hostkeeper::helper::docker_credential_helper {

// The three error lines the clients recognise by their exact text
// (credentials/error.go upstream).
inline constexpr std::string_view kNotFound = "credentials not found in native keychain";
inline constexpr std::string_view kMissingServerURL = "no credentials server URL";
inline constexpr std::string_view kMissingUsername = "no credentials username";

struct DockerCredentials {
    std::string server;    // proto::docker_server_key() of ServerURL
    std::string username;  // not empty, at most proto::kMaxDockerUsernameSize bytes
    proto::Secret secret;
};

// `store`'s standard input: one JSON object. As the upstream helpers decode it
// (Go's encoding/json into their Credentials struct): the member names
// ServerURL, Username and Secret match in any letter case, a later member
// wins over an earlier one of the same name, null leaves a member unset,
// other members are ignored. Any other shape, a member that is not a string,
// or text after the object throws Error{bad_request} ending in "; nothing was
// stored"; a missing or empty ServerURL or Username throws exactly
// kMissingServerURL or kMissingUsername.
DockerCredentials parse_store_input(std::string_view input);

// `get`'s and `erase`'s standard input: the server URL. As upstream reads it,
// its lines are joined without their line ends; then
// proto::docker_server_key() (kMissingServerURL when nothing is left).
std::string parse_server_input(std::string_view input);

// What `get` prints and `list` prints: the JSON Go's encoding/json writes for
// them (keys in this order, then sorted; <, >, &, U+2028 and U+2029 escaped
// as \u003c..; bytes that are not UTF-8 as \ufffd), with a final newline.
std::string format_credentials(std::string_view server, std::string_view username,
                               std::string_view secret);
// `servers`: the daemon's docker_list "servers" object (server -> username).
std::string format_list(const proto::Json& servers);

}  // namespace hostkeeper::helper::docker_credential_helper
