#include "helper/client/connection.hpp"

#include <fcntl.h>
#include <poll.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <thread>

#include "proto/error.hpp"
#include "proto/framing.hpp"
#include "proto/secret.hpp"
#include "proto/socket_path.hpp"

namespace hostkeeper::helper::client {
namespace {

using proto::Error;
using proto::ErrorCode;

[[noreturn]] void throw_timeout(const Deadline& deadline) {
    char seconds[32];
    std::snprintf(seconds, sizeof seconds, "%g",
                  static_cast<double>(deadline.budget().count()) / 1000.0);
    throw Error(ErrorCode::timeout,
                std::string("gave up after ") + seconds +
                    " s waiting for hostkeeperd (the keyring may be waiting for an "
                    "unlock prompt; raise --timeout to wait longer)");
}

}  // namespace

std::optional<Connection> Connection::open(const std::filesystem::path& socket,
                                           const Deadline& deadline, int& error) {
    sockaddr_un address{};
    address.sun_family = AF_UNIX;
    const std::string& path = socket.native();
    if (path.size() >= sizeof address.sun_path) {
        error = ENAMETOOLONG;
        return std::nullopt;
    }
    std::memcpy(address.sun_path, path.c_str(), path.size() + 1);

    // Never talk to a socket another user could have put there: its directory
    // must be ours and private (before connecting), and whoever listens must
    // be us (after). Both throw proto::UnsafeSocket with the fix.
    const uid_t me = ::geteuid();
    try {
        proto::check_private_directory(socket.parent_path(), me);
    } catch (const std::filesystem::filesystem_error& e) {
        error = e.code().value();  // ENOENT: no directory, so no daemon yet
        return std::nullopt;
    }
    while (true) {
        const int fd = ::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
        if (fd < 0) {
            error = errno;
            return std::nullopt;
        }
        if (::connect(fd, reinterpret_cast<const sockaddr*>(&address), sizeof address) == 0) {
            Connection connection(fd);
            proto::check_peer(fd, me, socket);
            return connection;
        }
        error = errno;
        ::close(fd);
        // EAGAIN: the daemon's accept backlog is full; it is alive, so wait.
        if (error != EAGAIN || deadline.expired()) return std::nullopt;
        std::this_thread::sleep_for(std::chrono::milliseconds(2));
    }
}

Connection::~Connection() {
    if (fd_ >= 0) ::close(fd_);
}

void Connection::wait_for(short events, const Deadline& deadline) {
    pollfd pfd{fd_, events, 0};
    while (true) {
        const int rc = ::poll(&pfd, 1, deadline.remaining_ms());
        if (rc > 0) return;
        if (rc == 0) throw_timeout(deadline);
        if (errno != EINTR) throw ConnectionLost(std::string("poll: ") + std::strerror(errno));
    }
}

void Connection::write_all(const std::string& bytes, const Deadline& deadline) {
    std::size_t done = 0;
    while (done < bytes.size()) {
        const ssize_t n = ::send(fd_, bytes.data() + done, bytes.size() - done, MSG_NOSIGNAL);
        if (n > 0) {
            done += static_cast<std::size_t>(n);
        } else if (n < 0 && (errno == EAGAIN || errno == EINTR)) {
            wait_for(POLLOUT, deadline);
        } else {
            throw ConnectionLost(std::string("hostkeeperd closed the connection: ") +
                                 std::strerror(errno));
        }
    }
}

bool Connection::read_exact(char* data, std::size_t size, const Deadline& deadline) {
    std::size_t done = 0;
    while (done < size) {
        const ssize_t n = ::recv(fd_, data + done, size - done, 0);
        if (n > 0) {
            done += static_cast<std::size_t>(n);
        } else if (n == 0) {
            if (done == 0) return false;
            throw ConnectionLost("hostkeeperd closed the connection in the middle of a response");
        } else if (errno == EAGAIN || errno == EINTR) {
            wait_for(POLLIN, deadline);
        } else if (errno == ECONNRESET) {
            throw ConnectionLost("hostkeeperd closed the connection without answering");
        } else {
            throw ConnectionLost(std::string("reading from hostkeeperd: ") + std::strerror(errno));
        }
    }
    return true;
}

proto::Json Connection::round_trip(const proto::Json& request, const Deadline& deadline) {
    std::string payload = proto::serialize(request);
    std::string frame = proto::encode_frame(payload);
    proto::scrub(payload);
    const proto::ScrubGuard frame_guard(frame);
    // A daemon that refuses us (busy, forbidden) writes one frame and hangs
    // up without reading: our write may then fail, but its answer is there.
    std::optional<ConnectionLost> write_failed;
    try {
        write_all(frame, deadline);
    } catch (const ConnectionLost& e) {
        write_failed = e;
    }

    proto::FrameHeader header{};
    if (!read_exact(reinterpret_cast<char*>(header.data()), header.size(), deadline)) {
        if (write_failed) throw ConnectionLost(*write_failed);
        throw ConnectionLost("hostkeeperd closed the connection without answering");
    }
    std::size_t size = 0;
    try {
        size = proto::decode_header(header, proto::kMaxResponseFrameSize);
    } catch (const Error& e) {
        throw ConnectionLost(std::string("hostkeeperd sent a bad response: ") + e.what());
    }
    std::string body(size, '\0');
    const proto::ScrubGuard body_guard(body);
    read_exact(body.data(), size, deadline);
    try {
        return proto::parse_payload(body);
    } catch (const Error& e) {
        throw ConnectionLost(std::string("hostkeeperd sent a bad response: ") + e.what());
    }
}

}  // namespace hostkeeper::helper::client
