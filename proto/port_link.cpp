#include "proto/port_link.hpp"

#include <fcntl.h>
#include <poll.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include <cerrno>
#include <charconv>
#include <cstdlib>
#include <cstring>
#include <fstream>

#include "proto/printable.hpp"
#include "proto/socket_path.hpp"

namespace hostkeeper::proto {
namespace fs = std::filesystem;
using namespace std::string_literals;

namespace {

constexpr std::string_view kRequestPrefix = "hostkeeper-port 1 ";
constexpr std::string_view kSocketField = "socket=";
constexpr std::string_view kHeldPrefix =
    "another hostkeeperd of this user holds the registry port: pid ";
constexpr std::string_view kHeldSocket = ", socket ";

std::string describe_errno(const std::string& what, int error) {
    return what + ": " + std::strerror(error);
}

// Waits until `fd` is ready for `events`; false on timeout.
bool wait_for(int fd, short events, std::chrono::milliseconds timeout) {
    pollfd p{fd, events, 0};
    for (;;) {
        const int n = ::poll(&p, 1, static_cast<int>(timeout.count()));
        if (n >= 0) return n > 0;
        if (errno != EINTR) return false;
    }
}

// The overflow uid, which every owner the namespace does not map shows as.
uid_t overflow_uid() {
    unsigned long nobody = 65534;
    std::ifstream("/proc/sys/kernel/overflowuid") >> nobody;
    return static_cast<uid_t>(nobody);
}

// Whether `uid`, owning `path` (the socket, a directory above it, or the
// listener on kPortSocket), is root. Where root is mapped only 0 is. Where
// it is not (a user unit's PrivateUsers=), root and every other user alike
// show as the overflow uid: it is taken for root only on the built-in path,
// whose directories only root may make (/, /run, /run/hostkeeper), never
// on a path another user could have made.
bool shows_as_root(uid_t uid, const fs::path& path) {
    if (uid == 0) return true;
    if (!root_is_unmapped() || uid != overflow_uid()) return false;
    const fs::path socket(kPortSocket);
    return path == socket || path == socket.parent_path() ||
           path == socket.parent_path().parent_path() || path == socket.root_path();
}

}  // namespace

bool nameable_socket(std::string_view socket) {
    if (socket.empty() || socket.front() != '/' || socket.size() > kMaxLinkSocket) return false;
    // A name the printable filter would change could not be read back from
    // the reply that names it.
    return printable(socket) == socket;
}

std::string port_request(PortVerb verb, std::string_view socket) {
    if (verb == PortVerb::probe) return std::string(kRequestPrefix) + "probe\n";
    std::string line = std::string(kRequestPrefix) + "register";
    if (nameable_socket(socket)) line.append(" ").append(kSocketField).append(socket);
    return line + "\n";
}

std::optional<PortRequest> parse_port_request(std::string_view line) {
    if (line.substr(0, kRequestPrefix.size()) != kRequestPrefix) return std::nullopt;
    line.remove_prefix(kRequestPrefix.size());
    if (line == "probe") return PortRequest{PortVerb::probe, {}};
    constexpr std::string_view kRegister = "register";
    if (line.substr(0, kRegister.size()) != kRegister) return std::nullopt;
    line.remove_prefix(kRegister.size());
    if (line.empty()) return PortRequest{PortVerb::register_user, {}};
    if (line.front() != ' ') return std::nullopt;
    line.remove_prefix(1);
    if (line.substr(0, kSocketField.size()) != kSocketField) return std::nullopt;
    line.remove_prefix(kSocketField.size());
    if (!nameable_socket(line)) return std::nullopt;
    return PortRequest{PortVerb::register_user, std::string(line)};
}

std::string port_reply_ok(std::uint16_t port) {
    return "ok " + std::to_string(port) + "\n";
}

std::string port_reply_error(std::string_view message) {
    std::string line = "error ";
    append_printable(line, message.substr(0, kMaxPortLine - line.size() - 1));
    return line + "\n";
}

std::string port_reply_held(const PortHolder& holder) {
    std::string message = std::string(kHeldPrefix) + std::to_string(holder.pid);
    if (nameable_socket(holder.socket)) message.append(kHeldSocket).append(holder.socket);
    return port_reply_error(message);
}

namespace {

// The holder named by an error `message`, when it is port_reply_held's.
std::optional<PortHolder> parse_holder(std::string_view message) {
    if (message.substr(0, kHeldPrefix.size()) != kHeldPrefix) return std::nullopt;
    message.remove_prefix(kHeldPrefix.size());
    const std::size_t digits = message.find_first_not_of("0123456789");
    const std::string_view number = message.substr(0, digits);
    PortHolder holder;
    const auto [end, ec] =
        std::from_chars(number.data(), number.data() + number.size(), holder.pid);
    if (ec != std::errc() || end != number.data() + number.size() || number.empty() ||
        number.front() == '0' || holder.pid <= 0) {
        return std::nullopt;
    }
    if (digits == std::string_view::npos) return holder;
    message.remove_prefix(digits);
    if (message.substr(0, kHeldSocket.size()) != kHeldSocket) return std::nullopt;
    message.remove_prefix(kHeldSocket.size());
    if (!nameable_socket(message)) return std::nullopt;
    holder.socket = std::string(message);
    return holder;
}

}  // namespace

PortReply parse_port_reply(std::string_view line) {
    PortReply reply;
    if (line.substr(0, 3) == "ok ") {
        const std::string_view digits = line.substr(3);
        unsigned value = 0;
        const auto [end, ec] = std::from_chars(digits.data(), digits.data() + digits.size(), value);
        if (ec == std::errc() && end == digits.data() + digits.size() && !digits.empty() &&
            digits.front() != '0' && value <= 65535) {
            reply.port = static_cast<std::uint16_t>(value);
            return reply;
        }
    } else if (line.substr(0, 6) == "error " && line.size() > 6) {
        reply.error = std::string(line.substr(6));
        reply.holder = parse_holder(reply.error);
        return reply;
    }
    reply.error = "malformed reply";
    return reply;
}

bool root_is_unmapped() {
    std::ifstream map("/proc/self/uid_map");
    unsigned long inside = 0, outside = 0, count = 0;
    while (map >> inside >> outside >> count) {
        if (outside == 0 && count > 0) return false;
    }
    return true;
}

std::string port_socket_override() {
    const char* env = std::getenv("HOSTKEEPER_PORT_SOCKET");
    return env != nullptr ? std::string(env) : std::string();
}

fs::path port_socket_path() {
    const std::string chosen = port_socket_override();
    if (chosen.empty() || root_is_unmapped()) return kPortSocket;
    return chosen;
}

std::optional<unsigned> unprivileged_port_start() {
    std::ifstream in("/proc/sys/net/ipv4/ip_unprivileged_port_start");
    unsigned value = 0;
    if (!(in >> value)) return std::nullopt;
    return value;
}

std::string port_guarantee_problem(std::uint16_t port) {
    const std::optional<unsigned> start = unprivileged_port_start();
    // Kernels before 4.11 have no such setting: 1024 is their fixed limit.
    const unsigned limit = start.value_or(1024);
    if (port < limit) return "";
    return "port " + std::to_string(port) +
           " is not reserved for root here: net.ipv4.ip_unprivileged_port_start is " +
           std::to_string(limit) +
           " (a container's default is 0), so any user could bind it while it is free";
}

std::string port_socket_problem(const fs::path& path) {
    if (!path.is_absolute()) return path.string() + " is not an absolute path";
    struct stat st {};
    if (::lstat(path.c_str(), &st) != 0) {
        if (errno == ENOENT) {
            return path.string() +
                   " does not exist: hostkeeper-port.socket is not running (systemctl status "
                   "hostkeeper-port.socket)";
        }
        return describe_errno(path.string(), errno);
    }
    if (!S_ISSOCK(st.st_mode)) return path.string() + " is not a socket";
    if (!shows_as_root(st.st_uid, path)) return path.string() + " is not root's";
    bool own_directory = true;
    for (fs::path dir = path.parent_path();; dir = dir.parent_path()) {
        struct stat d {};
        if (::lstat(dir.c_str(), &d) != 0) return describe_errno(dir.string(), errno);
        if (!S_ISDIR(d.st_mode)) return dir.string() + " is not a directory";
        if (!shows_as_root(d.st_uid, dir)) return dir.string() + " is not root's";
        const bool others_write = (d.st_mode & (S_IWGRP | S_IWOTH)) != 0;
        if (others_write && (own_directory || (d.st_mode & S_ISVTX) == 0))
            return dir.string() + " may be written by others than root";
        own_directory = false;
        if (dir == dir.root_path()) break;
    }
    return "";
}

PortConnection connect_port_service(const fs::path& path, PortVerb verb,
                                    std::chrono::milliseconds timeout,
                                    std::string_view own_socket) {
    if (std::string problem = port_socket_problem(path); !problem.empty())
        throw PortServiceError(problem);
    const std::string text = path.string();
    const std::optional<sockaddr_un> addr = unix_address(path);
    if (!addr) throw PortServiceError(text + ": the path is too long for a socket");
    PortConnection out;
    out.fd = UniqueFd(::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0));
    if (out.fd.get() < 0) throw PortServiceError(describe_errno("socket", errno));
    // NOLINTNEXTLINE(cppcoreguidelines-pro-type-reinterpret-cast): the sockets API
    if (::connect(out.fd.get(), reinterpret_cast<const sockaddr*>(&*addr), sizeof *addr) != 0) {
        if (errno != EINPROGRESS && errno != EAGAIN)
            throw PortServiceError(describe_errno("connect " + text, errno));
        if (!wait_for(out.fd.get(), POLLOUT, timeout))
            throw PortServiceError("connect " + text + ": no answer in time");
    }
    const std::optional<PeerCredentials> peer = peer_credentials(out.fd.get());
    if (!peer || !shows_as_root(peer->uid, path)) {
        throw PortServiceError(text + " is not served by root" +
                               (peer ? " (uid " + std::to_string(peer->uid) + ")" : ""s));
    }
    const std::string request = port_request(verb, own_socket);
    if (::send(out.fd.get(), request.data(), request.size(), MSG_NOSIGNAL) !=
        static_cast<ssize_t>(request.size())) {
        throw PortServiceError(describe_errno("send to " + text, errno));
    }
    // The reply is one line; read it byte by byte so that nothing handed
    // after it (a connection with its descriptor) is taken with it.
    std::string line;
    for (;;) {
        if (!wait_for(out.fd.get(), POLLIN, timeout))
            throw PortServiceError(text + ": no reply in time");
        char c = 0;
        const ssize_t n = ::recv(out.fd.get(), &c, 1, 0);
        if (n == 0) throw PortServiceError(text + ": the service closed without a reply");
        if (n < 0) {
            if (errno == EINTR || errno == EAGAIN) continue;
            throw PortServiceError(describe_errno("read from " + text, errno));
        }
        if (c == '\n') break;
        if (line.size() >= kMaxPortLine) throw PortServiceError(text + ": reply too long");
        line += c;
    }
    const PortReply reply = parse_port_reply(line);
    if (!reply.port && reply.error == kNotARequest && request != port_request(verb))
        return connect_port_service(path, verb, timeout);  // a service older than the field
    if (reply.holder) throw PortHeldElsewhere(text + ": " + reply.error, *reply.holder);
    if (!reply.port) throw PortServiceError(text + ": " + reply.error);
    if (std::string problem = port_guarantee_problem(*reply.port); !problem.empty())
        throw PortServiceError(problem);
    out.port = *reply.port;
    // The caller decides how to wait; the descriptor itself blocks.
    const int flags = ::fcntl(out.fd.get(), F_GETFL);
    if (flags >= 0) ::fcntl(out.fd.get(), F_SETFL, flags & ~O_NONBLOCK);
    return out;
}

namespace {

// One byte with room for one descriptor beside it: each handed connection.
struct HandedMessage {
    char byte = kHandedConnection;
    iovec iov{&byte, 1};
    alignas(cmsghdr) char control[CMSG_SPACE(sizeof(int))] = {};
    msghdr msg{};
    HandedMessage() {
        msg.msg_iov = &iov;
        msg.msg_iovlen = 1;
        msg.msg_control = control;
        msg.msg_controllen = sizeof control;
    }
    HandedMessage(const HandedMessage&) = delete;
    HandedMessage& operator=(const HandedMessage&) = delete;
};

}  // namespace

bool send_handed_connection(int link, int fd) {
    HandedMessage message;
    msghdr& msg = message.msg;
    cmsghdr* header = CMSG_FIRSTHDR(&msg);
    header->cmsg_level = SOL_SOCKET;
    header->cmsg_type = SCM_RIGHTS;
    header->cmsg_len = CMSG_LEN(sizeof(int));
    std::memcpy(CMSG_DATA(header), &fd, sizeof fd);
    for (;;) {
        const ssize_t n = ::sendmsg(link, &msg, MSG_NOSIGNAL | MSG_DONTWAIT);
        if (n == 1) return true;
        if (n < 0 && errno == EINTR) continue;
        return false;
    }
}

int receive_handed_connection(int link, int& received) {
    received = -1;
    HandedMessage message;
    message.byte = 0;
    msghdr& msg = message.msg;
    ssize_t n = 0;
    do {
        n = ::recvmsg(link, &msg, MSG_DONTWAIT | MSG_CMSG_CLOEXEC);
    } while (n < 0 && errno == EINTR);
    if (n <= 0) return static_cast<int>(n);
    int fd = -1;
    for (cmsghdr* header = CMSG_FIRSTHDR(&msg); header != nullptr;
         header = CMSG_NXTHDR(&msg, header)) {
        if (header->cmsg_level != SOL_SOCKET || header->cmsg_type != SCM_RIGHTS) continue;
        const std::size_t count = (header->cmsg_len - CMSG_LEN(0)) / sizeof(int);
        for (std::size_t i = 0; i < count; ++i) {
            int each = -1;
            std::memcpy(&each, CMSG_DATA(header) + i * sizeof(int), sizeof each);
            if (fd < 0) {
                fd = each;
            } else {
                ::close(each);  // one descriptor per byte; extras are not ours to keep
            }
        }
    }
    if (message.byte != kHandedConnection || fd < 0 || (msg.msg_flags & MSG_CTRUNC) != 0) {
        if (fd >= 0) ::close(fd);
        errno = EPROTO;
        return -1;
    }
    received = fd;
    return 1;
}

}  // namespace hostkeeper::proto
