#pragma once
// A listening TCP socket handed over SCM_RIGHTS (by PID 1 to
// hostkeeper-portd, by a run of `hostkeeper exec --registry-cache` to
// hostkeeperd): whether it is what both require, a TCP listener on a
// loopback address, and the port it is bound to.

#include <cstdint>
#include <string>

namespace hostkeeper::proto {

// "" when `fd` is a stream socket listening on a loopback address
// (127.0.0.0/8 or ::1) at a port; else what it is not: "not a stream
// socket", "not listening", "not a TCP socket", "not bound to a loopback
// address (127.0.0.1 or ::1)", "bound to no port", or the failed call.
std::string loopback_listener_problem(int fd);

// The port `fd` is bound to (host byte order); 0 when it has none.
std::uint16_t bound_port(int fd);

}  // namespace hostkeeper::proto
