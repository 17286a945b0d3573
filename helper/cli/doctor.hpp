#pragma once
// hostkeeper doctor: one line per check, the fix for each failure, exit 1 if
// any failed. Checks: the helper is where each tool looks and runs the
// installed binary; the credentials_helper block is in the file each tool
// reads, with no other helper; nothing shadows the keyring (credentials.tfrc.json,
// credentials blocks, TF_TOKEN_* variables); the socket directory is private;
// the daemon answers with the helper's version; the Secret Service stores and
// gives back a probe item (so the default collection is there and unlocked);
// each stored host's token, asked at its host (check.hpp).

#include "helper/client/daemon_client.hpp"

namespace hostkeeper::helper::cli {

int run_doctor(const client::ClientOptions& client);

}  // namespace hostkeeper::helper::cli
