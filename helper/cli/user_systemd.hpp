#pragma once
// The user's systemd manager, as setup needs it: is one running, and
// enabling or disabling hostkeeperd.socket in it (through systemctl --user).

#include <string>
#include <vector>

#include "helper/client/unit_state.hpp"  // kSocketUnit, kServiceUnit, user_manager_running()

namespace hostkeeper::helper::cli {

// Runs `systemctl --user ARGS...` with stdout/stderr passed through; its exit status
// (127 when systemctl cannot be run).
int systemctl_user(const std::vector<std::string>& args, bool quiet = false);

}  // namespace hostkeeper::helper::cli
