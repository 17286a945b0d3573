#pragma once
// The JSON object a stored secret holds (a git item's password and its
// fields, a pass entry's Docker or git credential), read with errors that
// name the item and never quote it.

#include <string>

#include "proto/json.hpp"
#include "proto/secret.hpp"

namespace hostkeeper::daemon::credentials {

// `text` parsed as a JSON object; the caller scrubs it (proto::ScrubGuard).
// Throws proto::Error keyring_error "WHAT does not hold a JSON object".
proto::Json stored_object(const proto::Secret& text, const std::string& what);

// The string member `name` of `object`. Throws proto::Error keyring_error
// "WHAT has no string "NAME"" followed by `otherwise` (": not a Docker
// credential"; "" for nothing more).
const std::string& stored_string(const proto::Json& object, const char* name,
                                 const std::string& what, const char* otherwise = "");

}  // namespace hostkeeper::daemon::credentials
