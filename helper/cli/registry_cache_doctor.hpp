#pragma once
// hostkeeper doctor's "registry cache" checks, and the line hostkeeper status
// prints for it.

#include <optional>
#include <string>

#include "helper/cli/doctor_sink.hpp"
#include "helper/client/daemon_client.hpp"
#include "proto/json.hpp"

namespace hostkeeper::helper::cli {

// First removes the directories of `hostkeeper exec --registry-cache` runs
// killed outright. Then: off (no registry-cache.json; a leftover tfrc file
// is a failure; the runs hostkeeperd serves, with their hosts), or: the
// mode in force and why (the registry port held by root for every user, or
// no blocks at all where no such port can be trusted), whether hostkeeperd
// is registered for it, each host, each tfrc file (a block naming any other
// port is a failure), an older setup's socket drop-in, and
// TF_CLI_CONFIG_FILE. `daemon_answers`: check_daemon's verdict.
// `config_valid`: false when hostkeeperd cannot run with its configuration
// (doctor said so above; this check then adds no fix of its own).
void check_registry_cache(const DoctorSink& report, const client::ClientOptions& client,
                          bool daemon_answers, bool config_valid);

// One line for `hostkeeper status` from its registry_cache object.
std::string registry_cache_status_line(const proto::Json& cache);

// When the registry_cache object says another hostkeeperd of this user holds
// the registry port (its other_daemon): what to report, and the fix.
struct SecondDaemon {
    std::string what;
    std::string fix;
};
std::optional<SecondDaemon> second_daemon(const proto::Json& cache);

}  // namespace hostkeeper::helper::cli
