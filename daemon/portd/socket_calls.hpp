#pragma once
// The socket calls of hostkeeper-portd that never wait: a socket's
// addresses, what a registry port listener must be, sends without blocking,
// resets.

#include <sys/socket.h>

#include <cstdint>
#include <string>
#include <string_view>

namespace hostkeeper::daemon::portd {

// Why the listening socket `fd` cannot be one of the registry port's: empty
// when it is a TCP listener on a loopback address (127.0.0.0/8 or ::1).
std::string tcp_listener_problem(int fd);

// The port the socket `fd` is bound to; 0 when it has none.
std::uint16_t bound_port(int fd);

// Resets the TCP connection `fd` (SO_LINGER 0) and closes it: no TIME_WAIT,
// and the client learns at once.
void reset_and_close(int fd);

// The local address of `fd`; false when the kernel names none.
bool local_address(int fd, sockaddr_storage& out);

// Sends all of `text` without waiting; false when the socket would block or
// failed (a reply or answer this small fits any fresh socket's buffer).
bool send_now(int fd, std::string_view text);

// Whether `error` (an errno) says the call would have waited.
bool would_block(int error);

}  // namespace hostkeeper::daemon::portd
