#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <catch2/catch.hpp>
#include <cstdint>
#include <string>

#include "daemon/registry_cache/run_ports.hpp"
#include "proto/unique_fd.hpp"

namespace test_run_ports {

using hostkeeper::daemon::registry_cache::RunPorts;
using hostkeeper::proto::UniqueFd;

namespace {

// A TCP socket on 127.0.0.1 at a port the kernel picks; listening or not.
UniqueFd tcp_socket(bool listening, std::uint16_t& port) {
    UniqueFd fd(::socket(AF_INET, SOCK_STREAM, 0));
    sockaddr_in address{};
    address.sin_family = AF_INET;
    address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    REQUIRE(::bind(fd.get(), reinterpret_cast<sockaddr*>(&address), sizeof address) == 0);
    if (listening) REQUIRE(::listen(fd.get(), 1) == 0);
    socklen_t len = sizeof address;
    REQUIRE(::getsockname(fd.get(), reinterpret_cast<sockaddr*>(&address), &len) == 0);
    port = ntohs(address.sin_port);
    return fd;
}

}  // namespace

TEST_CASE("unit: a run's socket is served only when it listens on loopback at its port") {
    std::uint16_t port = 0;
    const UniqueFd listening = tcp_socket(true, port);
    CHECK(RunPorts::listener_problem(listening.get(), port).empty());
    CHECK(RunPorts::listener_problem(listening.get(), static_cast<std::uint16_t>(port + 1)) ==
          "not on port " + std::to_string(port + 1));

    std::uint16_t other = 0;
    const UniqueFd bound = tcp_socket(false, other);
    CHECK(RunPorts::listener_problem(bound.get(), other) == "not listening");

    UniqueFd unix_socket(::socket(AF_UNIX, SOCK_STREAM, 0));
    sockaddr_un address{};
    address.sun_family = AF_UNIX;  // an abstract, autobound name
    REQUIRE(::bind(unix_socket.get(), reinterpret_cast<sockaddr*>(&address), sizeof(sa_family_t)) ==
            0);
    REQUIRE(::listen(unix_socket.get(), 1) == 0);
    CHECK(RunPorts::listener_problem(unix_socket.get(), port) == "not a TCP socket");

    UniqueFd datagram(::socket(AF_INET, SOCK_DGRAM, 0));
    CHECK(RunPorts::listener_problem(datagram.get(), port) == "not a stream socket");
}

}  // namespace test_run_ports
