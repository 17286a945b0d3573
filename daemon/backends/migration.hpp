#pragma once
// Moving hostkeeper's items from one keyring backend to another, all or
// nothing, so that the daemon never serves from a backend that holds only
// some of them: first every host is copied (read from the source, written to
// the target, read back from the target and compared); if any host fails,
// every copy made is removed from the target again and nothing has changed.
// Only when all are copied are they removed from the source. A host the
// target already holds with the same credentials counts as copied; with
// other credentials it fails (the user decides which is right). Worker
// thread; tokens are never logged. Every kind of item moves (Docker
// credentials and git items with the hosts), under the same rules, as its
// description says (credentials/item_kinds.hpp: what is copied, and how
// the result names it).

#include <map>
#include <string>
#include <vector>

#include "daemon/credentials/keyring.hpp"
#include "proto/error.hpp"

namespace hostkeeper::daemon::backends {

// A failure names its item: the kind and its key (a host, a Docker
// server, a git item's URL).
struct MigrationFailure {
    credentials::ItemKind kind = credentials::ItemKind::terraform;
    std::string key;
    proto::ErrorCode code = proto::ErrorCode::keyring_error;
    std::string message;
};

struct MigrationResult {
    std::string from;
    std::string to;
    // Each kind's keys now in the target only (none: no entry).
    std::map<credentials::ItemKind, std::vector<std::string>> migrated;
    std::vector<MigrationFailure> failed;    // why nothing moved
    std::vector<MigrationFailure> leftover;  // moved, but still in the source too
    bool switched = false;                   // the daemon uses `to` from now on

    // The kind's keys moved; empty when none.
    const std::vector<std::string>& moved(credentials::ItemKind kind) const;
};

// Throws proto::Error when the source's items cannot be listed (nothing changed then).
MigrationResult migrate(credentials::Keyring& from, credentials::Keyring& to);

}  // namespace hostkeeper::daemon::backends
