#pragma once
// A password typed at the user's terminal: echo off while it is read (the
// terminal's settings given back whatever way the read ends, a signal
// included), the text kept in a proto::Secret.

#include <cstddef>
#include <optional>
#include <string_view>

#include "proto/secret.hpp"

namespace hostkeeper::helper::client {

// The longest password read; a longer line is refused.
inline constexpr std::size_t kMaxTerminalPassword = 4096;

// Writes `prompt` to stderr and reads one line from `fd`, a terminal, with
// its echo off; what was typed before the prompt is discarded. nullopt when
// nothing was typed (an empty line, or end of input: Ctrl-D). Ctrl-Z is
// ignored meanwhile, and Ctrl-C, a hang-up or a termination gives the
// terminal its settings back before the signal ends the process. Throws
// proto::Error: bad_request when `fd` is no terminal or cannot be read,
// too_large past kMaxTerminalPassword bytes (what was read is scrubbed).
std::optional<proto::Secret> read_terminal_password(int fd, std::string_view prompt);

}  // namespace hostkeeper::helper::client
