#pragma once
// hostkeeper setup [--terraform] [--opentofu] [--dry-run] [--undo]: makes
// Terraform and OpenTofu use the helper, and can take that back.
//
// What setup changes, it records in $XDG_STATE_HOME/hostkeeper/setup.json
// (~/.local/state/hostkeeper/setup.json): each symlink with what it replaced,
// each credentials_helper block with the exact text inserted and whether the
// file was created, whether it enabled hostkeeperd.socket, and the registry
// cache's files, the git credential.helper value, the containers registries.conf
// drop-in. --undo reverses those records, newest first (with --registry-cache,
// --git or --docker, only theirs), and
// leaves alone anything the user changed since (it says so).
//
// --undo --restore-tokens first reads every token the daemon has stored and
// writes them into Terraform's credentials.tfrc.json (plaintext, as
// `terraform login` would), so that Terraform keeps working without the
// helper; a locked keyring stops it before anything is changed.

#include <string>
#include <vector>

#include "helper/client/daemon_client.hpp"

namespace hostkeeper::helper::cli {

struct SetupOptions {
    bool terraform = false;
    bool opentofu = false;
    bool dry_run = false;
    bool undo = false;
    bool restore_tokens = false;  // --undo --restore-tokens: tokens to credentials.tfrc.json
    bool registry_cache = false;  // --registry-cache (registry_cache_setup.hpp)
    std::vector<std::string> registry_hosts;  // its HOST... arguments
    bool git = false;                         // --git (git_config.hpp)
    bool docker = false;                      // --docker (containers_config.hpp)
};

// Prints what it changes (or would change); the process exit code. `client`:
// how to reach hostkeeperd (the registry cache restarts and asks it).
int run_setup(const SetupOptions& options, const client::ClientOptions& client = {});

}  // namespace hostkeeper::helper::cli
