#pragma once
// The private directories of `hostkeeper exec --registry-cache` runs: one
// per run, named run-PID-XXXXXX, in `runs/` beside the daemon's socket. A
// run removes its own when it ends; one killed outright (SIGKILL) cannot,
// and the next run or `hostkeeper doctor` removes it.

#include <cstddef>
#include <filesystem>

#include "helper/client/daemon_client.hpp"
#include "proto/socket_path.hpp"

namespace hostkeeper::helper::cli {

// Where the daemon's socket is for these client options: the one they name,
// else the user's default.
proto::SocketLocation socket_location(const client::ClientOptions& client);

// `runs/` in the socket's directory.
std::filesystem::path runs_directory(const proto::SocketLocation& location);

// Removes the directories in `runs` whose run's process is gone; how many.
// Nothing is removed unless `runs` and its parent are private directories
// of this user.
std::size_t remove_stale_runs(const std::filesystem::path& runs);

// Makes a new run's private directory (and `runs/`, private, when absent),
// after removing stale ones.
std::filesystem::path make_run_directory(const proto::SocketLocation& location);

}  // namespace hostkeeper::helper::cli
