#pragma once
// hostkeeper setup [--terraform] [--opentofu] [--dry-run] [--undo]: makes
// Terraform and OpenTofu use the helper, and can take that back.
//
// What setup changes, it records in $XDG_STATE_HOME/hostkeeper/setup.json
// (~/.local/state/hostkeeper/setup.json): each symlink with what it replaced,
// each credentials_helper block with the exact text inserted and whether the
// file was created, and whether it enabled hostkeeperd.socket. --undo
// reverses those records, newest first, and leaves alone anything the user
// changed since (it says so).

namespace hostkeeper::helper::cli {

struct SetupOptions {
    bool terraform = false;
    bool opentofu = false;
    bool dry_run = false;
    bool undo = false;
};

// Prints what it changes (or would change); the process exit code.
int run_setup(const SetupOptions& options);

}  // namespace hostkeeper::helper::cli
