#pragma once
// What a Terraform host's keyring item holds, read as hostkeeper serves it.

#include <string>

#include "proto/secret.hpp"

namespace hostkeeper::daemon::credentials {

// A credentials object as found in the keyring, made into the compact JSON
// object hostkeeper serves: JSON objects pass through, a bare token (as a
// person may paste into `secret-tool store`) becomes {"token": "..."}.
// Throws proto::Error{keyring_error} for anything else.
proto::Secret credentials_from_keyring_text(const std::string& host, const proto::Secret& text);

}  // namespace hostkeeper::daemon::credentials
