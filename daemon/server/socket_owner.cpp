#include "daemon/server/socket_owner.hpp"

#include <fcntl.h>
#include <sys/file.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <systemd/sd-daemon.h>
#include <unistd.h>

#include <cerrno>
#include <string>
#include <system_error>

#include "proto/socket_path.hpp"

namespace hostkeeper::daemon::server {
namespace {

[[noreturn]] void throw_errno(const std::string& what) {
    throw std::system_error(errno, std::generic_category(), what);
}

sockaddr_un address_of(const std::filesystem::path& path) {
    const std::optional<sockaddr_un> address = proto::unix_address(path);
    if (!address) {
        throw std::system_error(ENAMETOOLONG, std::generic_category(),
                                "socket path " + path.string());
    }
    return *address;
}

bool something_answers(const sockaddr_un& address) {
    const int fd = ::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (fd < 0) return false;
    const bool answers =
        ::connect(fd, reinterpret_cast<const sockaddr*>(&address), sizeof address) == 0;
    ::close(fd);
    return answers;
}

}  // namespace

SocketOwner::SocketOwner(const proto::SocketLocation& location) : location_(location) {
    proto::ensure_private_directory(location.directory, ::geteuid());
    const std::string lock_path = location.socket.string() + ".lock";
    lock_fd_ = ::open(lock_path.c_str(), O_RDWR | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0600);
    if (lock_fd_ < 0) throw_errno("cannot open " + lock_path);
    if (::flock(lock_fd_, LOCK_EX | LOCK_NB) != 0) {
        ::close(lock_fd_);
        lock_fd_ = -1;
        if (errno == EWOULDBLOCK) {
            throw AlreadyRunning("another hostkeeperd already serves " + location.socket.string());
        }
        throw_errno("cannot lock " + lock_path);
    }

    const sockaddr_un address = address_of(location.socket);
    struct stat st {};
    if (::lstat(location.socket.c_str(), &st) == 0) {
        if (!S_ISSOCK(st.st_mode)) {
            throw std::runtime_error(location.socket.string() +
                                     " exists and is not a socket; remove it");
        }
        // We hold the lock, so no other hostkeeperd is there; but systemd
        // may be listening on it for socket activation.
        if (something_answers(address)) {
            throw AlreadyRunning(
                location.socket.string() +
                " is served by another process, most likely systemd's hostkeeperd.socket; to run "
                "hostkeeperd yourself: 'systemctl --user stop hostkeeperd.socket "
                "hostkeeperd.service' first, and 'systemctl --user start hostkeeperd.socket' "
                "afterwards");
        }
        if (::unlink(location.socket.c_str()) != 0)
            throw_errno("cannot remove stale socket " + location.socket.string());
    }

    listen_fd_ = ::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (listen_fd_ < 0) throw_errno("socket");
    // Bound under a private name, listening, then renamed into place: the
    // socket path never names a socket that refuses connections (a client
    // between bind and listen would get ECONNREFUSED and think us dead).
    // Where the longer name does not fit in sun_path, bind in place.
    const std::filesystem::path staging = location.socket.string() + ".new";
    const bool staged = staging.native().size() < sizeof(sockaddr_un::sun_path);
    const sockaddr_un bind_address = staged ? address_of(staging) : address;
    if (staged && ::unlink(staging.c_str()) != 0 && errno != ENOENT) {
        throw_errno("cannot remove " + staging.string());
    }
    const mode_t old_mask = ::umask(077);
    const int bound =
        ::bind(listen_fd_, reinterpret_cast<const sockaddr*>(&bind_address), sizeof bind_address);
    ::umask(old_mask);
    if (bound != 0) throw_errno("cannot bind " + std::string(bind_address.sun_path));
    if (::listen(listen_fd_, SOMAXCONN) != 0) throw_errno("listen");
    if (staged && ::rename(staging.c_str(), location.socket.c_str()) != 0) {
        const int saved = errno;
        ::unlink(staging.c_str());
        errno = saved;
        throw_errno("cannot move the socket into place at " + location.socket.string());
    }
    if (::lstat(location.socket.c_str(), &st) == 0) inode_ = st.st_ino;
}

SocketOwner::~SocketOwner() {
    if (listen_fd_ >= 0) ::close(listen_fd_);
    struct stat st {};
    if (inode_ != 0 && ::lstat(location_.socket.c_str(), &st) == 0 && st.st_ino == inode_) {
        ::unlink(location_.socket.c_str());
    }
    if (lock_fd_ >= 0) ::close(lock_fd_);
}

int SocketOwner::release_listener() {
    const int fd = listen_fd_;
    listen_fd_ = -1;
    return fd;
}

SystemdListeners systemd_listeners() {
    const int n = sd_listen_fds(1);
    if (n < 0) throw std::system_error(-n, std::generic_category(), "sd_listen_fds");
    SystemdListeners out;
    for (int fd = SD_LISTEN_FDS_START; fd < SD_LISTEN_FDS_START + n; ++fd) {
        ::fcntl(fd, F_SETFD, FD_CLOEXEC);
        if (sd_is_socket_unix(fd, SOCK_STREAM, 1, nullptr, 0) > 0 && out.unix_fd < 0) {
            out.unix_fd = fd;
        } else if (sd_is_socket_inet(fd, AF_INET, SOCK_STREAM, 1, 0) > 0 && out.tcp_fd < 0) {
            out.tcp_fd = fd;
        } else {
            throw std::runtime_error("systemd passed " + std::to_string(n) +
                                     " sockets; hostkeeperd takes one listening Unix stream "
                                     "socket and at most one listening IPv4 TCP socket");
        }
    }
    if (n > 0 && out.unix_fd < 0) {
        throw std::runtime_error("systemd passed no listening Unix stream socket");
    }
    return out;
}

}  // namespace hostkeeper::daemon::server
