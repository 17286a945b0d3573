#pragma once
// What the daemon says of itself in status and keyring_unavailable replies,
// besides what the server knows (its connections).

#include <chrono>
#include <string>

namespace hostkeeper::daemon::handlers {

struct DaemonInfo {
    std::string socket;  // its path, or "(socket activation)"
    bool on_demand = false;
    std::chrono::seconds idle_timeout{0};
    std::chrono::steady_clock::time_point started = std::chrono::steady_clock::now();
};

}  // namespace hostkeeper::daemon::handlers
