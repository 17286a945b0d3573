#pragma once
// Finding a running hostkeeperd, or starting one, race-free: many helpers
// started at once end up talking to exactly one daemon.
//
// connect -> (nothing) -> create the private directory -> take spawn.lock ->
// connect again -> spawn `hostkeeperd --on-demand --ready-fd 3` in its own
// session -> wait for "ready" on the pipe -> connect.

#include <filesystem>
#include <stdexcept>

#include "helper/client/connection.hpp"
#include "helper/client/deadline.hpp"
#include "proto/socket_path.hpp"

namespace hostkeeper::helper::client {

// No daemon answers and none could be started; the message says why.
class NoDaemon : public std::runtime_error {
  public:
    using std::runtime_error::runtime_error;
};

Connection connect_or_start(const proto::SocketLocation& location, const Deadline& deadline,
                            bool allow_start);

// hostkeeperd next to this executable's resolved path, else on PATH.
std::filesystem::path find_daemon_executable();

}  // namespace hostkeeper::helper::client
