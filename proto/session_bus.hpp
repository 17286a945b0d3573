#pragma once
// Which D-Bus session bus a process would reach, judged from its environment
// as GLib's GDBus judges it: $DBUS_SESSION_BUS_ADDRESS, else the user bus
// socket $XDG_RUNTIME_DIR/bus when it is there. The daemon says which bus it
// has; a client compares it with its own to tell "your keyring is not
// running" from "the daemon was started somewhere without your bus".

#include <sys/types.h>

#include <string>

#include "proto/socket_path.hpp"

namespace hostkeeper::proto {

// The address, or "" when this environment reaches no session bus.
std::string session_bus_address(const EnvLookup& env, uid_t uid);
// With the process's environment and effective uid.
std::string session_bus_address();

}  // namespace hostkeeper::proto
