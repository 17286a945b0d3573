#include "daemon/portd/socket_calls.hpp"

#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>

#include "proto/sock_diag.hpp"

namespace hostkeeper::daemon::portd {

bool send_now(int fd, std::string_view text) {
    while (!text.empty()) {
        const ssize_t n = ::send(fd, text.data(), text.size(), MSG_DONTWAIT | MSG_NOSIGNAL);
        if (n < 0 && errno == EINTR) continue;
        if (n <= 0) return false;
        text.remove_prefix(static_cast<std::size_t>(n));
    }
    return true;
}

bool would_block(int error) {
    return error == EAGAIN || error == EWOULDBLOCK;
}

void reset_and_close(int fd) {
    proto::reset_on_close(fd);
    ::close(fd);
}

}  // namespace hostkeeper::daemon::portd
