#pragma once
// Who owns the client's end of a loopback TCP connection, asked of the kernel
// (NETLINK_SOCK_DIAG, inet_diag): one exact lookup by the connection's four
// addresses and ports, answered with the socket's owner. TCP has no
// SO_PEERCRED; this is what `ss -e` shows, without scanning any table.
//
// The request and the reply are pure functions of bytes (and fuzzed); only
// peer_uid() (and connection_owner(), through it) talks to the kernel.

#include <sys/socket.h>
#include <sys/types.h>

#include <array>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <string_view>
#include <vector>

namespace hostkeeper::proto {

// One lookup: the client's socket, seen from the client (its own address is
// the source, ours the destination). Addresses in network byte order, ports
// in host byte order.
struct DiagQuery {
    int family = AF_INET;                   // AF_INET (4 address bytes) or AF_INET6 (16)
    std::array<std::uint8_t, 16> client{};  // the peer of our accepted socket
    std::uint16_t client_port = 0;
    std::array<std::uint8_t, 16> server{};  // our end
    std::uint16_t server_port = 0;
    std::uint32_t sequence = 0;  // nlmsg_seq, to tell a late answer from this one
};

// The query for an accepted connection whose ends are `local` (ours,
// getsockname) and `peer` (getpeername); nullopt for anything but TCP over
// IPv4 or IPv6. A peer that reached an IPv6 socket through IPv4
// (::ffff:a.b.c.d) is looked up as the IPv4 socket it is.
std::optional<DiagQuery> diag_query(const sockaddr_storage& local, const sockaddr_storage& peer,
                                    std::uint32_t sequence);

// The netlink message asking for the one socket `query` names: an
// inet_diag_req_v2 (TCP, every state, no cookie) after an nlmsghdr of type
// SOCK_DIAG_BY_FAMILY with NLM_F_REQUEST only (not a dump: the kernel's exact
// lookup, inet_diag_find_one_icsk).
std::vector<std::uint8_t> diag_request(const DiagQuery& query);

enum class PeerVerdict {
    found,      // uid holds the socket's owner
    not_ours,   // nothing in the bytes answers this query (an older one's late answer)
    no_socket,  // the kernel answered with an error (ENOENT: the client is gone)
    mismatch,   // an answer about another socket
    no_owner,   // a socket in a state that has no owner (TIME_WAIT, a request sock, ...)
    malformed,  // bytes that are not a netlink answer
};

struct PeerReply {
    PeerVerdict verdict = PeerVerdict::malformed;
    uid_t uid = 0;  // when found
    int error = 0;  // when no_socket: the kernel's errno
};

// Reads the kernel's answer to `query` from `len` bytes at `data` (any bytes
// at all: it never reads outside them, and needs no alignment). Only a
// socket in a state with a full owner counts: ESTABLISHED, FIN_WAIT1/2,
// CLOSE_WAIT, CLOSING, LAST_ACK.
PeerReply parse_peer_reply(const void* data, std::size_t len, const DiagQuery& query);

// What a verdict means, for the log.
std::string_view describe(PeerVerdict verdict);

// A NETLINK_SOCK_DIAG socket (close-on-exec) whose receives time out after
// `timeout_ms`; -1 with errno on failure.
int open_sock_diag(int timeout_ms = 100);

// The owner of the client's end of the accepted TCP connection between
// `local` (ours) and `peer`, asked over `netlink_fd` (open_sock_diag): one
// round trip to the kernel, bounded by the socket's receive timeout. nullopt
// when the kernel knows no such socket with an owner.
std::optional<uid_t> peer_uid(int netlink_fd, const sockaddr_storage& local,
                              const sockaddr_storage& peer);

// The owner of the client's end of the accepted TCP connection `fd`, its two
// ends read with getsockname and getpeername: peer_uid's answer, or nullopt
// when an end cannot be read.
std::optional<uid_t> connection_owner(int netlink_fd, int fd);

// Makes the close of the TCP connection `fd` a reset (SO_LINGER of 0): a
// refused client learns nothing but that it was refused.
void reset_on_close(int fd);

}  // namespace hostkeeper::proto
