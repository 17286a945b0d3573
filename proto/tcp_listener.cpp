#include "proto/tcp_listener.hpp"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>

#include <cerrno>
#include <cstring>

namespace hostkeeper::proto {

namespace {

bool local_address(int fd, sockaddr_storage& out) {
    socklen_t len = sizeof out;
    // NOLINTNEXTLINE(cppcoreguidelines-pro-type-reinterpret-cast): the sockets API
    return ::getsockname(fd, reinterpret_cast<sockaddr*>(&out), &len) == 0;
}

bool is_loopback(const sockaddr_storage& address) {
    if (address.ss_family == AF_INET) {
        sockaddr_in in{};
        std::memcpy(&in, &address, sizeof in);
        return (ntohl(in.sin_addr.s_addr) >> 24) == 127;
    }
    if (address.ss_family == AF_INET6) {
        sockaddr_in6 in6{};
        std::memcpy(&in6, &address, sizeof in6);
        return IN6_IS_ADDR_LOOPBACK(&in6.sin6_addr) != 0;
    }
    return false;
}

}  // namespace

std::string loopback_listener_problem(int fd) {
    int type = 0;
    int listening = 0;
    socklen_t len = sizeof type;
    if (::getsockopt(fd, SOL_SOCKET, SO_TYPE, &type, &len) != 0 || type != SOCK_STREAM)
        return "not a stream socket";
    len = sizeof listening;
    if (::getsockopt(fd, SOL_SOCKET, SO_ACCEPTCONN, &listening, &len) != 0 || listening == 0)
        return "not listening";
    sockaddr_storage address{};
    if (!local_address(fd, address)) return std::string("getsockname: ") + std::strerror(errno);
    if (address.ss_family != AF_INET && address.ss_family != AF_INET6) return "not a TCP socket";
    if (!is_loopback(address)) return "not bound to a loopback address (127.0.0.1 or ::1)";
    if (bound_port(fd) == 0) return "bound to no port";
    return "";
}

std::uint16_t bound_port(int fd) {
    sockaddr_storage address{};
    if (!local_address(fd, address)) return 0;
    if (address.ss_family == AF_INET) {
        sockaddr_in in{};
        std::memcpy(&in, &address, sizeof in);
        return ntohs(in.sin_port);
    }
    if (address.ss_family == AF_INET6) {
        sockaddr_in6 in6{};
        std::memcpy(&in6, &address, sizeof in6);
        return ntohs(in6.sin6_port);
    }
    return 0;
}

}  // namespace hostkeeper::proto
