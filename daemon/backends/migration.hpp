#pragma once
// Moving hostkeeper's items from one keyring backend to another, one host
// at a time: read it from the source, write it to the target, read it back
// from the target and compare, and only then remove it from the source. A
// host that fails at any step is left as it was in both: what was written
// to the target is removed again, and a host the target already holds with
// other credentials is not touched (the user decides which is right).
// Worker thread; tokens are never logged.

#include <string>
#include <vector>

#include "daemon/credentials/keyring.hpp"
#include "proto/error.hpp"

namespace hostkeeper::daemon::backends {

struct MigrationFailure {
    std::string host;
    proto::ErrorCode code = proto::ErrorCode::keyring_error;
    std::string message;
};

struct MigrationResult {
    std::string from;
    std::string to;
    std::vector<std::string> migrated;
    std::vector<MigrationFailure> failed;
    bool switched = false;  // the daemon uses `to` from now on
};

// Throws proto::Error when the source's items cannot be listed (nothing changed then).
MigrationResult migrate(credentials::Keyring& from, credentials::Keyring& to);

}  // namespace hostkeeper::daemon::backends
