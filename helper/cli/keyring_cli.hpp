#pragma once
// The keyring backend from the command line: the lines `status` prints for
// it, `hostkeeper unlock` and `hostkeeper migrate`.

#include <string>
#include <vector>

#include "helper/client/daemon_client.hpp"
#include "proto/json.hpp"

namespace hostkeeper::helper::cli {

// status's "keyring" object for people: the backend in use and why, the
// store (pass), and, when the choice was automatic, what was tried.
std::vector<std::string> keyring_status_lines(const proto::Json& keyring);

// The Secret Service: asks the daemon to unlock its default collection.
// pass: decrypts every entry with gpg in this terminal so that gpg-agent asks
// for the passphrase through pinentry and caches it, then flushes the
// daemon's cache. 0 when everything is unlocked, 1 otherwise.
int run_unlock(const client::ClientOptions& client);

// Moves every host to the backend `to` ("pass" or "secret-service") through
// the daemon; on success writes it into config.toml. 0 when every host moved
// and the daemon switched, 1 when a host failed or the daemon refused.
int run_migrate(const client::ClientOptions& client, const std::string& to);

}  // namespace hostkeeper::helper::cli
