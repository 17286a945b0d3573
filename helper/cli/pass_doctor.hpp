#pragma once
// hostkeeper doctor's checks of the `pass` backend: a usable secret key for
// each .gpg-id recipient, gpg-agent, a writable store, and an entry the
// daemon decrypts without a prompt.

#include <optional>
#include <string>

#include "helper/cli/doctor_sink.hpp"
#include "helper/client/daemon_client.hpp"
#include "proto/json.hpp"

namespace hostkeeper::helper::cli {

// `keyring`: status's keyring object, with backend "pass".
void check_pass(const DoctorSink& report, const client::ClientOptions& client,
                const proto::Json& keyring);

// Why a key cannot serve a password store, and what fixes it.
struct KeyProblem {
    std::string what;
    std::string fix;  // names the key's fingerprint
};

// What --list-secret-keys --with-colons says about a key, for people:
// nullopt when it is usable (a secret key, valid, able to encrypt), else why
// not: expired (renew it), revoked or disabled, or valid without a usable
// encryption subkey (add one).
std::optional<KeyProblem> secret_key_problem(const std::string& colons);

}  // namespace hostkeeper::helper::cli
