#pragma once
// hostkeeper rotate HOST [--json]: a new HCP Terraform / Terraform
// Enterprise user token for HOST, made with the stored one (the daemon's
// `rotate`). Prints what happened. Exit 0 when rotated (a previous token
// that could not be revoked is a warning); 3 when no token is stored for
// HOST or it offers no tfe.v2; 7 (kExitRejected) when the host refused the
// stored token; else 1 (nothing was changed, or the old token was put back).

#include <memory>
#include <string>

#include "helper/client/daemon_client.hpp"
#include "proto/json.hpp"

namespace hostkeeper::helper::cli {

// The text for people of a `rotate` answer, and its exit code.
struct RotateOutcome {
    int exit_code = 1;
    std::string text;
};
RotateOutcome rotate_outcome(const proto::Json& answer);

int run_rotate(const client::ClientOptions& client, const std::string& host, bool json);

}  // namespace hostkeeper::helper::cli
