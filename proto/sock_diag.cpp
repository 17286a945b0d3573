#include "proto/sock_diag.hpp"

#include <arpa/inet.h>
#include <linux/inet_diag.h>
#include <linux/netlink.h>
#include <linux/sock_diag.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <sys/time.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstring>

namespace hostkeeper::proto {

namespace {

// The kernel's TCP states (include/net/tcp_states.h); only the first few are
// in <netinet/tcp.h>, and TCP_NEW_SYN_RECV never is.
enum TcpState : std::uint8_t {
    kEstablished = 1,
    kFinWait1 = 4,
    kFinWait2 = 5,
    kTimeWait = 6,
    kCloseWait = 8,
    kLastAck = 9,
    kClosing = 11,
    kNewSynRecv = 12,
};

// Every state: a socket about to close still has its owner.
constexpr std::uint32_t kAllStates = ~0U;

// The states whose sockets are full sockets with an owner. TIME_WAIT and
// NEW_SYN_RECV are mini sockets whose idiag_uid is 0 and means nothing;
// LISTEN, SYN_SENT, SYN_RECV and CLOSE cannot be the client's end of a
// connection we accepted.
bool has_owner(std::uint8_t state) {
    switch (state) {
        case kEstablished:
        case kFinWait1:
        case kFinWait2:
        case kCloseWait:
        case kLastAck:
        case kClosing:
            return true;
        default:
            return false;
    }
}

constexpr std::size_t address_size(int family) {
    return family == AF_INET ? 4 : 16;
}

bool is_v4_mapped(const std::uint8_t* a) {
    static constexpr std::uint8_t kPrefix[12] = {0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff};
    return std::memcmp(a, kPrefix, sizeof kPrefix) == 0;
}

// The address and port of `s` as the kernel reports them: 4 bytes for IPv4
// (an IPv4-mapped IPv6 address included), 16 for IPv6; false for others.
struct Endpoint {
    int family = AF_UNSPEC;
    std::array<std::uint8_t, 16> address{};
    std::uint16_t port = 0;
};
bool endpoint_of(const sockaddr_storage& s, Endpoint& out) {
    if (s.ss_family == AF_INET) {
        sockaddr_in in{};
        std::memcpy(&in, &s, sizeof in);
        out.family = AF_INET;
        std::memcpy(out.address.data(), &in.sin_addr, 4);
        out.port = ntohs(in.sin_port);
        return true;
    }
    if (s.ss_family == AF_INET6) {
        sockaddr_in6 in6{};
        std::memcpy(&in6, &s, sizeof in6);
        const auto* bytes = in6.sin6_addr.s6_addr;
        if (is_v4_mapped(bytes)) {
            out.family = AF_INET;
            std::memcpy(out.address.data(), bytes + 12, 4);
        } else {
            out.family = AF_INET6;
            std::memcpy(out.address.data(), bytes, 16);
        }
        out.port = ntohs(in6.sin6_port);
        return true;
    }
    return false;
}

// Whether `reported` (idiag_src or idiag_dst, in a reply of `family`) is the
// address `expected` of the query's family. An IPv4 socket may be an IPv6
// socket talking IPv4: the kernel reports it as AF_INET6 with ::ffff:a.b.c.d.
bool same_address(int family, const std::uint8_t* reported, int query_family,
                  const std::uint8_t* expected) {
    if (family == query_family) {
        return std::memcmp(reported, expected, address_size(family)) == 0;
    }
    if (family == AF_INET6 && query_family == AF_INET) {
        return is_v4_mapped(reported) && std::memcmp(reported + 12, expected, 4) == 0;
    }
    return false;
}

}  // namespace

std::optional<DiagQuery> diag_query(const sockaddr_storage& local, const sockaddr_storage& peer,
                                    std::uint32_t sequence) {
    Endpoint ours;
    Endpoint theirs;
    if (!endpoint_of(local, ours) || !endpoint_of(peer, theirs)) return std::nullopt;
    // Both ends of one connection speak the same IP version.
    if (ours.family != theirs.family) return std::nullopt;
    DiagQuery query;
    query.family = ours.family;
    query.client = theirs.address;
    query.client_port = theirs.port;
    query.server = ours.address;
    query.server_port = ours.port;
    query.sequence = sequence;
    return query;
}

std::vector<std::uint8_t> diag_request(const DiagQuery& query) {
    inet_diag_req_v2 request{};
    request.sdiag_family = static_cast<std::uint8_t>(query.family);
    request.sdiag_protocol = IPPROTO_TCP;
    request.idiag_ext = 0;
    request.idiag_states = kAllStates;
    request.id.idiag_sport = htons(query.client_port);
    request.id.idiag_dport = htons(query.server_port);
    std::memcpy(request.id.idiag_src, query.client.data(), address_size(query.family));
    std::memcpy(request.id.idiag_dst, query.server.data(), address_size(query.family));
    request.id.idiag_if = 0;
    request.id.idiag_cookie[0] = INET_DIAG_NOCOOKIE;
    request.id.idiag_cookie[1] = INET_DIAG_NOCOOKIE;

    nlmsghdr header{};
    header.nlmsg_len = static_cast<std::uint32_t>(sizeof header + sizeof request);
    header.nlmsg_type = SOCK_DIAG_BY_FAMILY;
    header.nlmsg_flags = NLM_F_REQUEST;
    header.nlmsg_seq = query.sequence;
    header.nlmsg_pid = 0;

    std::vector<std::uint8_t> out(sizeof header + sizeof request);
    std::memcpy(out.data(), &header, sizeof header);
    std::memcpy(out.data() + sizeof header, &request, sizeof request);
    return out;
}

PeerReply parse_peer_reply(const void* data, std::size_t len, const DiagQuery& query) {
    // The walk of NLMSG_OK/NLMSG_NEXT, on copies: the bytes need not be
    // aligned, and no length is trusted before it is checked against what
    // is left.
    const auto* bytes = static_cast<const std::uint8_t*>(data);
    std::size_t left = data == nullptr ? 0 : len;
    PeerReply reply;
    reply.verdict = PeerVerdict::not_ours;
    while (left >= sizeof(nlmsghdr)) {
        nlmsghdr header{};
        std::memcpy(&header, bytes, sizeof header);
        if (header.nlmsg_len < sizeof header || header.nlmsg_len > left) {
            reply.verdict = PeerVerdict::malformed;
            return reply;
        }
        const std::uint8_t* payload = bytes + sizeof header;
        const std::size_t payload_len = header.nlmsg_len - sizeof header;
        if (header.nlmsg_seq == query.sequence) {
            if (header.nlmsg_type == NLMSG_ERROR) {
                nlmsgerr error{};
                if (payload_len < sizeof error) {
                    reply.verdict = PeerVerdict::malformed;
                    return reply;
                }
                std::memcpy(&error, payload, sizeof error);
                reply.verdict = PeerVerdict::no_socket;
                // The kernel sends -errno; anything else (INT_MIN has no
                // negation) is a protocol error of its own.
                reply.error = error.error < 0 && error.error >= -4095 ? -error.error : EPROTO;
                return reply;
            }
            if (header.nlmsg_type == NLMSG_DONE) {
                reply.verdict = PeerVerdict::no_socket;
                reply.error = ENOENT;
                return reply;
            }
            if (header.nlmsg_type == SOCK_DIAG_BY_FAMILY) {
                inet_diag_msg msg{};
                if (payload_len < sizeof msg) {
                    reply.verdict = PeerVerdict::malformed;
                    return reply;
                }
                std::memcpy(&msg, payload, sizeof msg);
                const int family = msg.idiag_family;
                std::uint8_t src[16];
                std::uint8_t dst[16];
                std::memcpy(src, msg.id.idiag_src, sizeof src);
                std::memcpy(dst, msg.id.idiag_dst, sizeof dst);
                const bool same = (family == AF_INET || family == AF_INET6) &&
                                  ntohs(msg.id.idiag_sport) == query.client_port &&
                                  ntohs(msg.id.idiag_dport) == query.server_port &&
                                  same_address(family, src, query.family, query.client.data()) &&
                                  same_address(family, dst, query.family, query.server.data());
                if (!same) {
                    reply.verdict = PeerVerdict::mismatch;
                    return reply;
                }
                if (!has_owner(msg.idiag_state)) {
                    reply.verdict = PeerVerdict::no_owner;
                    return reply;
                }
                reply.verdict = PeerVerdict::found;
                reply.uid = msg.idiag_uid;
                return reply;
            }
        }
        // Another message (an older query's late answer, or a type we did
        // not ask for): the next one, at its aligned start.
        const std::size_t step = NLMSG_ALIGN(header.nlmsg_len);
        if (step >= left) break;
        bytes += step;
        left -= step;
    }
    if (left != 0 && left < sizeof(nlmsghdr) && reply.verdict == PeerVerdict::not_ours) {
        reply.verdict = PeerVerdict::malformed;
    }
    return reply;
}

std::string_view describe(PeerVerdict verdict) {
    switch (verdict) {
        case PeerVerdict::found:
            return "found";
        case PeerVerdict::not_ours:
            return "no answer to this lookup";
        case PeerVerdict::no_socket:
            return "no such socket";
        case PeerVerdict::mismatch:
            return "an answer about another socket";
        case PeerVerdict::no_owner:
            return "a socket without an owner";
        case PeerVerdict::malformed:
            return "a malformed answer";
    }
    return "?";
}

int open_sock_diag(int timeout_ms) {
    const int fd = ::socket(AF_NETLINK, SOCK_DGRAM | SOCK_CLOEXEC, NETLINK_SOCK_DIAG);
    if (fd < 0) return -1;
    timeval timeout{};
    timeout.tv_sec = timeout_ms / 1000;
    timeout.tv_usec = static_cast<suseconds_t>(timeout_ms % 1000) * 1000;
    if (::setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &timeout, sizeof timeout) != 0 ||
        ::setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &timeout, sizeof timeout) != 0) {
        const int error = errno;
        ::close(fd);
        errno = error;
        return -1;
    }
    return fd;
}

std::optional<uid_t> peer_uid(int netlink_fd, const sockaddr_storage& local,
                              const sockaddr_storage& peer) {
    // Each lookup has its own sequence number, so that a late answer to an
    // earlier one (its receive timed out) is skipped, never taken for this.
    static std::uint32_t sequence = 0;
    const std::optional<DiagQuery> query = diag_query(local, peer, ++sequence);
    if (!query) return std::nullopt;

    // Late answers still queued are stale: drop them first.
    alignas(nlmsghdr) std::uint8_t buffer[8192];
    while (::recv(netlink_fd, buffer, sizeof buffer, MSG_DONTWAIT) > 0) {
    }

    const std::vector<std::uint8_t> request = diag_request(*query);
    sockaddr_nl kernel{};
    kernel.nl_family = AF_NETLINK;
    for (;;) {
        // NOLINTNEXTLINE(cppcoreguidelines-pro-type-reinterpret-cast): the sockets API
        const ssize_t sent = ::sendto(netlink_fd, request.data(), request.size(), 0,
                                      reinterpret_cast<const sockaddr*>(&kernel), sizeof kernel);
        if (sent == static_cast<ssize_t>(request.size())) break;
        if (sent < 0 && errno == EINTR) continue;
        return std::nullopt;
    }
    // The socket's receive timeout bounds each wait; the deadline bounds
    // them all, whatever arrives.
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::milliseconds(200);
    while (std::chrono::steady_clock::now() < deadline) {
        const ssize_t n = ::recv(netlink_fd, buffer, sizeof buffer, 0);
        if (n < 0) {
            if (errno == EINTR) continue;
            return std::nullopt;  // EAGAIN: the receive timed out
        }
        const PeerReply reply = parse_peer_reply(buffer, static_cast<std::size_t>(n), *query);
        if (reply.verdict == PeerVerdict::found) return reply.uid;
        if (reply.verdict != PeerVerdict::not_ours) return std::nullopt;
    }
    return std::nullopt;
}

std::optional<uid_t> connection_owner(int netlink_fd, int fd) {
    sockaddr_storage local{};
    sockaddr_storage peer{};
    socklen_t local_len = sizeof local;
    socklen_t peer_len = sizeof peer;
    if (::getsockname(fd, reinterpret_cast<sockaddr*>(&local), &local_len) != 0 ||
        ::getpeername(fd, reinterpret_cast<sockaddr*>(&peer), &peer_len) != 0)
        return std::nullopt;
    return peer_uid(netlink_fd, local, peer);
}

void reset_on_close(int fd) {
    const linger reset{1, 0};
    ::setsockopt(fd, SOL_SOCKET, SO_LINGER, &reset, sizeof reset);
}

}  // namespace hostkeeper::proto
