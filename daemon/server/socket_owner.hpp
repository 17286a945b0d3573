#pragma once
// Owning the daemon's socket safely: a private 0700 directory, a lock that
// makes one daemon per socket, a stale socket replaced but a live one never
// taken over, and the socket removed on exit. Or: a listening socket handed
// over by systemd socket activation (LISTEN_FDS), which systemd owns.

#include <sys/types.h>

#include <filesystem>
#include <stdexcept>

#include "proto/socket_path.hpp"

namespace hostkeeper::daemon::server {

// Another live daemon (or systemd) serves the socket.
class AlreadyRunning : public std::runtime_error {
  public:
    using std::runtime_error::runtime_error;
};

class SocketOwner {
  public:
    // Binds and listens at `location.socket`; the path appears only once it
    // accepts connections (bound elsewhere, renamed). Throws AlreadyRunning,
    // proto::UnsafeDirectory, or std::system_error.
    explicit SocketOwner(const proto::SocketLocation& location);
    SocketOwner(const SocketOwner&) = delete;
    SocketOwner& operator=(const SocketOwner&) = delete;
    // Removes the socket file (if it is still ours) and releases the lock.
    ~SocketOwner();

    // The listening socket; the caller takes ownership.
    int release_listener();
    const std::filesystem::path& path() const { return location_.socket; }

  private:
    proto::SocketLocation location_;
    int lock_fd_ = -1;
    int listen_fd_ = -1;
    ino_t inode_ = 0;
};

// The sockets systemd passed (LISTEN_FDS): the listening Unix stream socket
// (-1 when not socket-activated) and, when the socket unit also listens on
// the registry cache's loopback port, that listening TCP socket (else -1).
// Throws std::runtime_error for an unusable hand-over.
struct SystemdListeners {
    int unix_fd = -1;
    int tcp_fd = -1;
};
SystemdListeners systemd_listeners();

}  // namespace hostkeeper::daemon::server
