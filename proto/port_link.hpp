#pragma once
// The registry port: one loopback TCP port (kRegistryPort, below the kernel's
// ip_unprivileged_port_start, so that no ordinary user can ever bind it) where
// Terraform and OpenTofu reach every user's registry cache. PID 1 holds it
// from boot (hostkeeper-port.socket); hostkeeper-portd, unprivileged, learns
// the owner of each connection from the kernel and hands the connection to
// that user's hostkeeperd. This is the contract of the port service's Unix
// socket, shared by both ends, and the checks a client makes before it
// trusts the service.
//
// A client (hostkeeperd, or `hostkeeper setup`/`doctor` probing) connects to
// the socket, checks that root listens on it (SO_PEERCRED of a socket
// systemd made is PID 1's), and sends one line:
//   "hostkeeper-port 1 register\n"   hand me my user's connections
//   "hostkeeper-port 1 probe\n"      only tell me the port
//   "hostkeeper-port 1 register socket=PATH\n"
//                                    the same, naming the daemon's own socket
// The service answers one line: "ok PORT\n" or "error MESSAGE\n". After "ok"
// to `register`, each TCP connection whose client runs as the registered
// user arrives as one byte ('c') carrying the connection's descriptor
// (SCM_RIGHTS). The registration lasts until either end closes. A user has
// one registration at a time: while it lasts, another of the same user is
// answered "error " + port_reply_held's message, naming the daemon that
// holds it (its pid, and its socket when its request named one), and the
// holder keeps it. A holder whose link has ended (EOF) is replaced, and so
// is one that has left handed connections unread for too long (wedged).

#include <sys/types.h>

#include <chrono>
#include <cstdint>
#include <filesystem>
#include <optional>
#include <stdexcept>
#include <string>
#include <string_view>
#include <utility>

#include "proto/unique_fd.hpp"

namespace hostkeeper::proto {

// The port hostkeeper-port.socket holds on 127.0.0.1 and [::1].
inline constexpr std::uint16_t kRegistryPort = 585;
// Where hostkeeper-port.socket listens for the users' daemons.
inline constexpr const char* kPortSocket = "/run/hostkeeper/port.sock";
// A request or reply line, its newline included, is at most this long.
inline constexpr std::size_t kMaxPortLine = 256;
// The byte that carries each handed connection.
inline constexpr char kHandedConnection = 'c';

// The longest socket path a registration names (longer ones are left out):
// the request and the reply that names the holder both fit in a line.
inline constexpr std::size_t kMaxLinkSocket = 160;
// The service's message for a line that is no request.
inline constexpr std::string_view kNotARequest = "not a hostkeeper-port 1 request";

enum class PortVerb { register_user, probe };

struct PortRequest {
    PortVerb verb = PortVerb::probe;
    std::string socket;  // register: the daemon's socket, when it named one
};

// Whether `socket` may be named in a request: absolute, at most
// kMaxLinkSocket bytes, and left as it is by the printable filter (no
// control characters, well-formed UTF-8).
bool nameable_socket(std::string_view socket);

// "hostkeeper-port 1 register\n" / "hostkeeper-port 1 probe\n"; with a
// nameable `socket`, "hostkeeper-port 1 register socket=SOCKET\n".
std::string port_request(PortVerb verb, std::string_view socket = {});
// The request `line` (its newline removed); nullopt for anything else.
std::optional<PortRequest> parse_port_request(std::string_view line);

// "ok PORT\n".
std::string port_reply_ok(std::uint16_t port);
// "error MESSAGE\n": control characters become spaces, the line is capped.
std::string port_reply_error(std::string_view message);

// The daemon that holds a user's registration.
struct PortHolder {
    pid_t pid = 0;
    std::string socket;  // empty when its registration named none
    bool operator==(const PortHolder&) const = default;
};
// "error another hostkeeperd of this user holds the registry port: pid PID,
// socket SOCKET\n" (", socket SOCKET" only with a nameable socket).
std::string port_reply_held(const PortHolder& holder);

struct PortReply {
    std::optional<std::uint16_t> port;  // "ok PORT"
    std::string error;                  // else why: the service's message, or "malformed reply"
    std::optional<PortHolder> holder;   // the error is port_reply_held's
};
// A reply `line` (its newline removed).
PortReply parse_port_reply(std::string_view line);

// True inside a user namespace whose uid map leaves root out (a user unit's
// PrivateUsers=): root's files, and every other user's, then show as the
// overflow uid.
bool root_is_unmapped();

// $HOSTKEEPER_PORT_SOCKET ("" when unset): a test world's service.
std::string port_socket_override();

// $HOSTKEEPER_PORT_SOCKET when set (a test world's service), else kPortSocket;
// always kPortSocket where root is unmapped, since no path outside it can be
// told to be root's there.
std::filesystem::path port_socket_path();

// /proc/sys/net/ipv4/ip_unprivileged_port_start of this network namespace:
// the lowest port an unprivileged process may bind (IPv4 and IPv6 alike);
// nullopt when it cannot be read (a kernel without it: 1024).
std::optional<unsigned> unprivileged_port_start();

// Why no user but root can ever hold `port`: empty when it is below the
// kernel's ip_unprivileged_port_start, else the reason.
std::string port_guarantee_problem(std::uint16_t port);

// Why `path` cannot be root's port service: empty when it is a socket owned
// by root, in directories owned by root that nobody else may write (sticky
// ones such as /tmp excepted above the socket's own directory). Inside a user
// namespace that does not map root (hostkeeperd.service's PrivateUsers=),
// root and every other user show as the overflow uid, which is then taken for
// root only for kPortSocket and the directories above it (/run/hostkeeper,
// /run, /), and for the listener on kPortSocket: only root can make those.
std::string port_socket_problem(const std::filesystem::path& path);

// The service cannot be used; the message says why and what to do.
class PortServiceError : public std::runtime_error {
  public:
    using std::runtime_error::runtime_error;
};
// The service refused a registration: another daemon of the user holds it.
class PortHeldElsewhere : public PortServiceError {
  public:
    PortHeldElsewhere(const std::string& what, PortHolder by)
        : PortServiceError(what), holder(std::move(by)) {}
    PortHolder holder;
};

struct PortConnection {
    UniqueFd fd{-1};  // connected to the service (blocking, close-on-exec)
    std::uint16_t port = 0;
};

// Connects to the service at `path`, checks the socket (port_socket_problem)
// and its listener (root), sends `verb` (naming `own_socket` when it is
// nameable), reads the reply and checks that the port it names is guaranteed
// (port_guarantee_problem). A service that does not know the socket field
// (kNotARequest) is asked again without it. Throws PortServiceError,
// PortHeldElsewhere for a registration another daemon holds. Each step is
// bounded by `timeout`.
PortConnection connect_port_service(const std::filesystem::path& path, PortVerb verb,
                                    std::chrono::milliseconds timeout,
                                    std::string_view own_socket = {});

// The service's side: sends one handed connection `fd` over `link`
// (non-blocking: false with errno EAGAIN when the link's buffer is full).
bool send_handed_connection(int link, int fd);

// The daemon's side: receives one handed connection from `link` into
// `received` (close-on-exec). Returns 1 with a descriptor, 0 at the end of
// the registration (the service closed), -1 with errno (EAGAIN: nothing yet;
// EPROTO: the service sent something that is not a handed connection).
int receive_handed_connection(int link, int& received);

}  // namespace hostkeeper::proto
