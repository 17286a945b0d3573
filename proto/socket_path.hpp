#pragma once
// Where the daemon's socket lives, and the checks that keep it per-user.
// Resolution order: $HOSTKEEPER_SOCKET, else /run/user/UID/hostkeeper/socket
// when /run/user/UID is the user's own private runtime directory (a real
// directory, not a symlink, owned by the user, mode 0700 or stricter), else
// $XDG_RUNTIME_DIR/hostkeeper/socket, else /tmp/hostkeeper-UID/socket. The
// uid's runtime directory comes before the variable so that every client of
// a user reaches one daemon, whatever XDG_RUNTIME_DIR it was started with
// (podman, for one, sets /tmp/podman-run-UID where none is set). The
// socket's directory must be owned by the user and carry no group or other
// permissions (0700).

#include <sys/types.h>
#include <sys/un.h>

#include <filesystem>
#include <functional>
#include <optional>
#include <stdexcept>

namespace hostkeeper::proto {

struct SocketLocation {
    std::filesystem::path socket;
    std::filesystem::path directory;  // the socket's parent, which must be private
};

// Reads an environment variable; returns nullptr when it is unset.
using EnvLookup = std::function<const char*(const char*)>;

// Where logind makes each logged-in user's runtime directory.
inline constexpr const char* kUserRuntimeRoot = "/run/user";

// `runtime_root`/UID is the uid's runtime directory (kUserRuntimeRoot but
// in tests).
SocketLocation resolve_socket_location(
    const EnvLookup& env, uid_t uid, const std::filesystem::path& runtime_root = kUserRuntimeRoot);
// Whether `dir` is a real directory (not a symlink) owned by `uid` with mode
// 0700 or stricter: one that may hold the user's socket.
bool is_private_directory(const std::filesystem::path& dir, uid_t uid);
// With the process's environment and effective uid.
SocketLocation resolve_socket_location();

// A local safety problem with the socket; the message says how to fix it.
class UnsafeSocket : public std::runtime_error {
  public:
    using std::runtime_error::runtime_error;
};
// The socket's directory is not private to the user.
class UnsafeDirectory : public UnsafeSocket {
  public:
    using UnsafeSocket::UnsafeSocket;
};
// What listens on the socket runs as another user.
class ForeignPeer : public UnsafeSocket {
  public:
    using UnsafeSocket::UnsafeSocket;
};

// Throws UnsafeDirectory unless `dir` is a real directory (not a symlink)
// owned by `uid` with mode 0700 or stricter; std::filesystem::filesystem_error
// when it cannot be examined (ENOENT included).
void check_private_directory(const std::filesystem::path& dir, uid_t uid);
// Creates `dir` with mode 0700 when it is missing (its parent must exist; the
// mode is set by mkdir itself, so there is no window with a looser one), then
// checks it as check_private_directory does.
void ensure_private_directory(const std::filesystem::path& dir, uid_t uid);

// The process at the other end of the connected Unix socket `fd`
// (SO_PEERCRED: for a listening socket, whoever called listen()); nullopt
// when the kernel does not say. Both ends check it.
struct PeerCredentials {
    pid_t pid = 0;
    uid_t uid = 0;
};
std::optional<PeerCredentials> peer_credentials(int fd);
// Throws ForeignPeer unless the other end of `fd` runs as `uid`; `socket`
// names it in the message.
void check_peer(int fd, uid_t uid, const std::filesystem::path& socket);

// The address of the Unix socket at `path`; nullopt when the path and its
// terminating NUL do not fit in sun_path.
std::optional<sockaddr_un> unix_address(const std::filesystem::path& path);

}  // namespace hostkeeper::proto
