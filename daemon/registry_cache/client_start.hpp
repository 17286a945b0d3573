#pragma once
// When the process that runs a client started: the registry cache hands a
// routed host's token, while it does not hold its port, only to a Terraform
// that started after the tfrc files lost their blocks.

#include <sys/types.h>

#include <optional>

namespace hostkeeper::daemon::registry_cache {

// When `pid`'s parent started (wall clock, seconds since the epoch), from
// /proc/PID/stat, /proc/PPID/stat and /proc/stat's btime; nullopt when unknown.
std::optional<double> parent_start_time(pid_t pid);

}  // namespace hostkeeper::daemon::registry_cache
