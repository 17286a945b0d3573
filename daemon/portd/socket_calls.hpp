#pragma once
// The socket calls of hostkeeper-portd that never wait: sends without
// blocking, resets. (What a registry port listener must be:
// proto/tcp_listener.hpp.)

#include <sys/socket.h>

#include <cstdint>
#include <string>
#include <string_view>

namespace hostkeeper::daemon::portd {

// Resets the TCP connection `fd` (SO_LINGER 0) and closes it: no TIME_WAIT,
// and the client learns at once.
void reset_and_close(int fd);

// Sends all of `text` without waiting; false when the socket would block or
// failed (a reply or answer this small fits any fresh socket's buffer).
bool send_now(int fd, std::string_view text);

// Whether `error` (an errno) says the call would have waited.
bool would_block(int error);

}  // namespace hostkeeper::daemon::portd
