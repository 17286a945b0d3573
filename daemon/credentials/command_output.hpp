#pragma once
// What a token command prints, read: a JSON object {"token": "...",
// "expires_at": "RFC 3339"} or {"token": "...", "expires_in": SECONDS}, or
// exactly one non-empty line holding the bare token. Errors say what is
// wrong and never quote the output (it may hold a token).

#include <chrono>
#include <cstddef>
#include <optional>
#include <stdexcept>
#include <string_view>

#include "proto/secret.hpp"

namespace hostkeeper::daemon::credentials {

// The most a token command may print on standard output.
inline constexpr std::size_t kMaxCommandOutput = std::size_t{64} * 1024;

struct CommandOutput {
    proto::Secret token;  // the token alone, not a credentials object
    std::optional<std::chrono::system_clock::time_point> expires_at;
    std::optional<std::chrono::seconds> expires_in;  // 1 or more
};

class CommandOutputError : public std::runtime_error {
  public:
    using std::runtime_error::runtime_error;
};

// Throws CommandOutputError; the message completes "the command ...".
CommandOutput read_command_output(std::string_view text);

}  // namespace hostkeeper::daemon::credentials
