// docker-credential-hostkeeper: a Docker credential helper
// (docker/docker-credential-helpers' protocol) that keeps registry
// credentials in the keyring through hostkeeperd. Docker, Podman and OpenTofu
// run it as `docker-credential-hostkeeper store|get|erase|list|version`.
// Options come from the environment only (the protocol has none):
// HOSTKEEPER_SOCKET, else $XDG_RUNTIME_DIR/hostkeeper/socket.

#include <unistd.h>

#include <string>
#include <vector>

#include "helper/client/daemon_client.hpp"
#include "helper/docker_credential_helper/docker_helper.hpp"

int main(int argc, char** argv) {
    using namespace hostkeeper::helper;
    constexpr double kTimeoutSeconds = 30;
    return docker_credential_helper::run(std::vector<std::string>(argv + 1, argv + argc),
                                         STDIN_FILENO, STDOUT_FILENO,
                                         client::make_client_options("", kTimeoutSeconds));
}
