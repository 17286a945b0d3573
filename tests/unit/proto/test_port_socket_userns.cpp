// The registry port's socket as hostkeeperd sees it inside a user namespace
// that does not map root (hostkeeperd.service's PrivateUsers=), where root's
// files and every other user's show as the overflow uid alike. Hidden from a
// plain run: tests/unit/proto/port_socket_userns.sh makes that world (an
// impostor's socket in a directory another uid made, root's on the built-in
// path) and runs these as an unprivileged uid in it.

#include <catch2/catch.hpp>
#include <chrono>
#include <cstdlib>
#include <string>

#include "proto/port_link.hpp"

namespace test_port_socket_userns {

using namespace hostkeeper::proto;
using namespace std::chrono_literals;

TEST_CASE("where root is unmapped, only the built-in port socket is taken for root's",
          "[.userns]") {
    REQUIRE(root_is_unmapped());
    const char* impostor = std::getenv("HK_IMPOSTOR_SOCKET");
    REQUIRE(impostor != nullptr);
    ::setenv("HOSTKEEPER_PORT_SOCKET", impostor, 1);

    // The variable does not move the daemon off the built-in path here.
    CHECK(port_socket_path() == kPortSocket);
    CHECK(port_socket_override() == impostor);

    // Its owner shows as the overflow uid, as root would: not enough.
    CHECK_THAT(port_socket_problem(impostor),
               Catch::Contains(std::string(impostor) + " is not root's"));
    CHECK_THROWS_AS(connect_port_service(impostor, PortVerb::register_user, 2s), PortServiceError);

    // Root's service on the built-in path, whose directories only root can
    // make, is taken.
    CHECK(port_socket_problem(kPortSocket).empty());
    const PortConnection root = connect_port_service(kPortSocket, PortVerb::probe, 5s);
    CHECK(root.port == kRegistryPort);
    ::unsetenv("HOSTKEEPER_PORT_SOCKET");
}

}  // namespace test_port_socket_userns
