#pragma once
// git-credential-hostkeeper: a git credential helper (git-credential(1))
// over hostkeeperd's git_* requests (proto/PROTOCOL.md, "git credentials").
//
// git runs `git-credential-hostkeeper ACTION` with the credential on stdin:
//   get      stdout username=, password= [password_expiry_utc=,
//            oauth_refresh_token=] lines, or nothing when nothing is kept
//   store    keeps what git learned elsewhere; prints nothing
//   erase    removes a git credential kept by store; prints nothing
//   other    any other action: nothing, exit 0 (git's rule for helpers)
// Only protocol=https reaches the daemon: for any other protocol each
// action does nothing. A failure is one line "git-credential-hostkeeper:
// MESSAGE" on stderr and exit status 1 (git then asks its next helper or
// the user).

#include <string>
#include <string_view>
#include <vector>

#include "helper/client/daemon_client.hpp"

namespace hostkeeper::helper::git_credential_helper {

inline constexpr std::string_view kProgram = "git-credential-hostkeeper";

// The whole helper: `args` is argv without the program name; the credential
// is read from `in`, the answer written to `out`, failures to `err`.
// Returns the exit status (0, or 1 for any failure).
int run(const std::vector<std::string>& args, int in, int out, int err,
        const client::ClientOptions& options);

}  // namespace hostkeeper::helper::git_credential_helper
