#include "proto/socket_path.hpp"

#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <system_error>

namespace hostkeeper::proto {
namespace fs = std::filesystem;

namespace {

bool usable(const char* value) {
    return value != nullptr && value[0] == '/';
}

std::string octal_mode(mode_t mode) {
    char text[8];
    std::snprintf(text, sizeof text, "%04o", static_cast<unsigned>(mode & 07777U));
    return text;
}

}  // namespace

bool is_private_directory(const fs::path& dir, uid_t uid) {
    struct stat st {};
    return ::lstat(dir.c_str(), &st) == 0 && S_ISDIR(st.st_mode) && st.st_uid == uid &&
           (st.st_mode & 077U) == 0;
}

SocketLocation resolve_socket_location(const EnvLookup& env, uid_t uid,
                                       const fs::path& runtime_root) {
    fs::path socket;
    const fs::path own_runtime = runtime_root / std::to_string(uid);
    if (const char* explicit_path = env("HOSTKEEPER_SOCKET");
        explicit_path != nullptr && explicit_path[0] != '\0') {
        socket = fs::absolute(explicit_path);
    } else if (is_private_directory(own_runtime, uid)) {
        socket = own_runtime / "hostkeeper" / "socket";
    } else if (const char* runtime = env("XDG_RUNTIME_DIR"); usable(runtime)) {
        socket = fs::path(runtime) / "hostkeeper" / "socket";
    } else {
        socket = fs::path("/tmp") / ("hostkeeper-" + std::to_string(uid)) / "socket";
    }
    return {socket, socket.parent_path()};
}

SocketLocation resolve_socket_location() {
    return resolve_socket_location([](const char* name) { return std::getenv(name); }, geteuid());
}

void check_private_directory(const fs::path& dir, uid_t uid) {
    struct stat st {};
    if (lstat(dir.c_str(), &st) != 0) {
        throw fs::filesystem_error("cannot examine socket directory", dir,
                                   std::error_code(errno, std::generic_category()));
    }
    if (S_ISLNK(st.st_mode) || !S_ISDIR(st.st_mode)) {
        throw UnsafeDirectory("socket directory " + dir.string() +
                              " is not a directory (or is a symbolic link); remove it, or set "
                              "HOSTKEEPER_SOCKET to a path in a directory of your own");
    }
    if (st.st_uid != uid) {
        throw UnsafeDirectory("socket directory " + dir.string() + " is owned by uid " +
                              std::to_string(st.st_uid) + ", not by you (uid " +
                              std::to_string(uid) +
                              "); remove it, or set HOSTKEEPER_SOCKET to a "
                              "path in a directory of your own");
    }
    if ((st.st_mode & 077U) != 0) {
        throw UnsafeDirectory("socket directory " + dir.string() + " has mode " +
                              octal_mode(st.st_mode) +
                              ", which lets other users reach the socket; it must be 0700: run "
                              "'chmod 700 " +
                              dir.string() + "'");
    }
}

void ensure_private_directory(const fs::path& dir, uid_t uid) {
    if (mkdir(dir.c_str(), 0700) != 0 && errno != EEXIST) {
        throw fs::filesystem_error("cannot create socket directory", dir,
                                   std::error_code(errno, std::generic_category()));
    }
    check_private_directory(dir, uid);
}

std::optional<PeerCredentials> peer_credentials(int fd) {
    ucred peer{};
    socklen_t length = sizeof peer;
    if (::getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &peer, &length) != 0 || length != sizeof peer)
        return std::nullopt;
    return PeerCredentials{peer.pid, peer.uid};
}

void check_peer(int fd, uid_t uid, const fs::path& socket) {
    const std::optional<PeerCredentials> peer = peer_credentials(fd);
    if (peer && peer->uid == uid) return;
    throw ForeignPeer(
        "the process listening on " + socket.string() +
        (peer ? " runs as uid " + std::to_string(peer->uid)
              : std::string(" runs as an unknown user")) +
        ", not as you (uid " + std::to_string(uid) +
        "): refusing to send it anything. Someone else may be impersonating hostkeeperd; check who "
        "owns that socket, or set HOSTKEEPER_SOCKET to a path in a directory of your own");
}

std::optional<sockaddr_un> unix_address(const fs::path& path) {
    sockaddr_un address{};
    address.sun_family = AF_UNIX;
    const std::string& text = path.native();
    if (text.size() >= sizeof address.sun_path) return std::nullopt;
    std::memcpy(address.sun_path, text.c_str(), text.size() + 1);
    return address;
}

}  // namespace hostkeeper::proto
