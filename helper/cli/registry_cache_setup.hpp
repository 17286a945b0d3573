#pragma once
// hostkeeper setup --registry-cache [HOST...]: writes registry-cache.json
// (kept on a rerun, HOSTs added; an older file's capability dropped), the systemd drop-in
// that makes hostkeeperd.socket hold the port, restarts hostkeeperd so that
// it reads them, then asks it (registry_cache_sync) to route the hosts and
// reports per host. Records what it changes for --undo, which removes the
// file, the drop-in and the tfrc files hostkeeperd wrote.

#include <optional>
#include <string>
#include <vector>

#include "helper/cli/setup_plan.hpp"
#include "helper/client/daemon_client.hpp"
#include "helper/terraform_config/tool_locations.hpp"
#include "proto/json.hpp"
#include "proto/registry_cache_file.hpp"

namespace hostkeeper::helper::cli {

using RegistryCacheConfig = proto::RegistryCacheFile;

// proto::registry_cache_config_path(), checked as hostkeeperd checks it;
// nullopt when it does not exist. Throws proto::FileError naming the file
// and what is wrong with it.
std::optional<RegistryCacheConfig> read_registry_cache_config();

// Adds the steps, notes and refusals (a bad HOST, a broken file) to `plan`.
// `tools`: the tools in scope, whose config directories get hostkeeper.tfrc.
void plan_registry_cache(Plan& plan, const std::vector<terraform_config::ToolPaths>& tools,
                         const std::vector<std::string>& hosts,
                         const client::ClientOptions& client);

// After the steps: asks hostkeeperd to route `hosts` (every host when
// empty) and prints what it says per host. The exit code.
int sync_registry_cache(const client::ClientOptions& client, const std::vector<std::string>& hosts,
                        bool dry_run);

// True for the records plan_registry_cache's steps leave in setup.json.
bool is_registry_cache_record(const proto::Json& action);
// Reverses one such record; what happened, for the user.
std::string undo_registry_cache(const proto::Json& action, bool dry_run,
                                const client::ClientOptions& client);

}  // namespace hostkeeper::helper::cli
