#pragma once
// Error codes that travel over the socket, and the exception that carries one
// inside a process. The text of each code is part of the protocol.

#include <optional>
#include <stdexcept>
#include <string>
#include <string_view>

namespace hostkeeper::proto {

enum class ErrorCode {
    bad_request,            // the frame or message is malformed
    bad_host,               // the hostname is not a valid registry hostname
    too_large,              // a frame or value over its size limit
    unsupported_version,    // the request's "v" is not one this daemon speaks
    unknown_op,             // the request's "op" is not one this daemon knows
    keyring_locked,         // the item or collection is locked and was not unlocked in time
    keyring_unavailable,    // no Secret Service on the session bus, or no session bus
    no_default_collection,  // the Secret Service has no default collection
    keyring_error,          // any other failure reported by the Secret Service
    timeout,                // the operation did not finish in time
    discovery_failed,       // a host's discovery document could not be fetched or used
    registry_failed,        // a registry or mirror document could not be fetched or used
    not_found,  // the registry or mirror has no such module, provider, version or package (404)
    unsupported_service,   // the host does not offer the service (modules.v1, providers.v1) the
                           // request needs
    verification_failed,   // a downloaded package does not match the hashes its publisher gave
    busy,                  // the daemon is at its connection limit
    forbidden,             // the peer is not the daemon's own user
    config_error,          // the daemon cannot run with its configuration file or options
    token_command_failed,  // a host's token_command failed, printed no usable token, or is
                           // refused (config.toml writable by another user)
    login_failed,          // a login.v1 login or refresh failed: the message says what the
                           // authorization server said, and to run hostkeeper login HOST
    internal,              // a bug: the message says what happened
};

std::string_view to_string(ErrorCode code) noexcept;
std::optional<ErrorCode> error_code_from_string(std::string_view text) noexcept;

class Error : public std::runtime_error {
  public:
    Error(ErrorCode code, const std::string& message) : std::runtime_error(message), code_(code) {}
    ErrorCode code() const noexcept { return code_; }

  private:
    ErrorCode code_;
};

}  // namespace hostkeeper::proto
