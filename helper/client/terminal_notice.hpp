#pragma once
// One line for the user's terminal when the credentials helper's `get` fails.
// Terraform logs a failed helper only at TF_LOG=WARN and goes on without
// credentials (the user then sees a bare 401), so the helper also writes its
// reason to the controlling terminal, where it shows inside Terraform's output.

#include <string>
#include <string_view>

namespace hostkeeper::helper::client {

// The environment variable that turns the terminal line off (any non-empty
// value but "0").
inline constexpr const char* kNoTtyVariable = "HOSTKEEPER_NO_TTY";

// "hostkeeper: no credentials for HOST: REASON" on one line: control
// characters (newlines, escape sequences) become spaces, and it is cut to a
// terminal-friendly length. Ends with "\n".
std::string terminal_notice_line(std::string_view host, std::string_view reason);

// Writes `line` to the controlling terminal (/dev/tty) and nothing else:
// silently nothing when there is none, when HOSTKEEPER_NO_TTY says so, or
// when the write fails. Never blocks on a full or stopped terminal and never
// stops the process (SIGTTOU is ignored for the write). Call it on failure
// only: it opens /dev/tty each time.
void tell_terminal(std::string_view line) noexcept;

}  // namespace hostkeeper::helper::client
