#include "helper/client/terminal_notice.hpp"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <csignal>
#include <cstdlib>
#include <cstring>

#include "proto/printable.hpp"

namespace hostkeeper::helper::client {
namespace {

// Long enough for every reason the daemon gives, short enough to stay a line
// or two on an 80-column terminal.
constexpr std::size_t kMaxReason = 400;

bool disabled_by_environment() {
    const char* value = std::getenv(kNoTtyVariable);
    return value != nullptr && *value != '\0' && std::strcmp(value, "0") != 0;
}

}  // namespace

// Control characters (C0, DEL) would break the line or drive the terminal:
// proto::append_printable makes them spaces.
std::string terminal_notice_line(std::string_view host, std::string_view reason) {
    using proto::append_printable;
    std::string line = "hostkeeper: no credentials for ";
    append_printable(line, host.substr(0, 255));
    line += ": ";
    if (reason.size() > kMaxReason) {
        append_printable(line, reason.substr(0, kMaxReason));
        line += "...";
    } else {
        append_printable(line, reason);
    }
    line += '\n';
    return line;
}

void tell_terminal(std::string_view line) noexcept {
    if (line.empty() || disabled_by_environment()) {
        return;
    }
    const int fd = ::open("/dev/tty", O_WRONLY | O_NOCTTY | O_CLOEXEC | O_NONBLOCK);
    if (fd < 0) {
        return;  // no controlling terminal (ENXIO), or none we may use
    }
    // A background job writing to a terminal with `stty tostop` would be
    // stopped by SIGTTOU; ignored, the write goes through.
    struct sigaction ignore {};
    struct sigaction previous {};
    ignore.sa_handler = SIG_IGN;
    sigemptyset(&ignore.sa_mask);
    const bool swapped = ::sigaction(SIGTTOU, &ignore, &previous) == 0;
    const char* data = line.data();
    std::size_t left = line.size();
    while (left > 0) {
        const ssize_t n = ::write(fd, data, left);
        if (n < 0 && errno == EINTR) {
            continue;
        }
        if (n <= 0) {
            break;  // EAGAIN on a full or stopped terminal: the line is dropped
        }
        data += n;
        left -= static_cast<std::size_t>(n);
    }
    if (swapped) {
        ::sigaction(SIGTTOU, &previous, nullptr);
    }
    ::close(fd);
}

}  // namespace hostkeeper::helper::client
