#pragma once
// Moving hostkeeper's items from one keyring backend to another, all or
// nothing, so that the daemon never serves from a backend that holds only
// some of them: first every host is copied (read from the source, written to
// the target, read back from the target and compared); if any host fails,
// every copy made is removed from the target again and nothing has changed.
// Only when all are copied are they removed from the source. A host the
// target already holds with the same credentials counts as copied; with
// other credentials it fails (the user decides which is right). Worker
// thread; tokens are never logged. Docker credentials and git items move
// with the hosts, under the same rules.

#include <string>
#include <vector>

#include "daemon/credentials/keyring.hpp"
#include "proto/error.hpp"

namespace hostkeeper::daemon::backends {

// A failure names a host, or (Docker credentials) a server, or (a git
// item) its URL.
struct MigrationFailure {
    std::string host;
    std::string server;
    std::string url;
    proto::ErrorCode code = proto::ErrorCode::keyring_error;
    std::string message;
};

struct MigrationResult {
    std::string from;
    std::string to;
    std::vector<std::string> migrated;         // now in the target only
    std::vector<std::string> docker_migrated;  // Docker credentials' servers, likewise
    std::vector<std::string> git_migrated;     // git items' URLs, likewise
    std::vector<MigrationFailure> failed;      // why nothing moved
    std::vector<MigrationFailure> leftover;    // moved, but still in the source too
    bool switched = false;                     // the daemon uses `to` from now on
};

// Throws proto::Error when the source's items cannot be listed (nothing changed then).
MigrationResult migrate(credentials::Keyring& from, credentials::Keyring& to);

}  // namespace hostkeeper::daemon::backends
