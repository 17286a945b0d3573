#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include <boost/asio/io_context.hpp>
#include <catch2/catch.hpp>
#include <cstdint>
#include <cstring>
#include <string>
#include <utility>
#include <vector>

#include "daemon/credentials/run_tokens.hpp"
#include "daemon/registry_cache/run_ports.hpp"
#include "proto/unique_fd.hpp"
#include "scratch_dir.hpp"

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

// A Unix socket listening at `path`.
UniqueFd unix_listener(const std::string& path) {
    UniqueFd fd(::socket(AF_UNIX, SOCK_STREAM, 0));
    sockaddr_un address{};
    address.sun_family = AF_UNIX;
    REQUIRE(path.size() < sizeof address.sun_path);
    std::memcpy(address.sun_path, path.c_str(), path.size());
    REQUIRE(::bind(fd.get(), reinterpret_cast<sockaddr*>(&address), sizeof address) == 0);
    REQUIRE(::listen(fd.get(), 1) == 0);
    return fd;
}

}  // namespace

// A run as the daemon meets it: a link socket listening in a private
// directory, the run's listening TCP socket, and the daemon's RunPorts.
struct RunWorld {
    RunWorld() {
        REQUIRE(::chmod(scratch.dir.c_str(), 0700) == 0);
        runs.hand_to([](boost::asio::ip::tcp::socket) {});
    }
    hostkeeper::test::ScratchDir scratch{"hk-run-ports"};
    const std::string link = (scratch.dir / "link.sock").string();
    const UniqueFd listener = unix_listener(link);
    std::uint16_t port = 0;
    const UniqueFd run_socket = tcp_socket(true, port);
    boost::asio::io_context io;
    hostkeeper::daemon::credentials::RunTokens tokens;
    RunPorts runs{io.get_executor(), tokens};
};

TEST_CASE("unit: a served run hears on its link that the routed hosts changed") {
    RunWorld world;
    RunPorts& runs = world.runs;
    runs.attach(world.link, world.port);
    const UniqueFd run_end(::accept(world.listener.get(), nullptr, nullptr));
    REQUIRE(run_end.get() >= 0);
    CHECK(runs.count() == 1);
    CHECK(runs.serves(world.port));
    CHECK_FALSE(runs.serves(static_cast<std::uint16_t>(world.port + 1)));

    // Until the run is given its host blocks, a change is in them.
    runs.hosts_changed();
    char news[8] = {};
    CHECK(::recv(run_end.get(), news, sizeof news, MSG_DONTWAIT) == -1);
    runs.told(world.port);
    runs.hosts_changed();
    runs.hosts_changed();
    CHECK(::recv(run_end.get(), news, sizeof news, MSG_DONTWAIT) == 2);
    CHECK(std::string(news, 2) == "hh");

    runs.stop();
    CHECK_FALSE(runs.serves(world.port));
    // The daemon closed its end of the link.
    CHECK(::recv(run_end.get(), news, sizeof news, 0) == 0);
}

TEST_CASE("unit: a run whose link accepts nothing is refused at once, not waited for") {
    RunWorld world;
    // Fill the link's queue: connections nobody accepts.
    std::vector<UniqueFd> queued;
    for (int i = 0; i < 64; ++i) {
        UniqueFd fd(::socket(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK, 0));
        sockaddr_un address{};
        address.sun_family = AF_UNIX;
        std::memcpy(address.sun_path, world.link.c_str(), world.link.size());
        if (::connect(fd.get(), reinterpret_cast<sockaddr*>(&address), sizeof address) != 0) break;
        queued.push_back(std::move(fd));
    }
    REQUIRE(queued.size() < 64);
    CHECK_THROWS_WITH(world.runs.attach(world.link, world.port),
                      Catch::Contains("cannot be reached"));
    CHECK(world.runs.count() == 0);
}

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
