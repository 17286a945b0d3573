// git-credential-hostkeeper: a git credential helper (git-credential(1))
// that answers https hosts from the keyring through hostkeeperd: the host's
// Terraform token, or what git stored through it. git runs it as
// `git-credential-hostkeeper get|store|erase` once `credential.helper` is
// `hostkeeper`. Options come from the environment only (git passes none):
// HOSTKEEPER_SOCKET, else $XDG_RUNTIME_DIR/hostkeeper/socket.

#include <unistd.h>

#include <string>
#include <vector>

#include "helper/client/daemon_client.hpp"
#include "helper/git_credential_helper/git_helper.hpp"

int main(int argc, char** argv) {
    using namespace hostkeeper::helper;
    constexpr double kTimeoutSeconds = 30;
    return git_credential_helper::run(std::vector<std::string>(argv + 1, argv + argc), STDIN_FILENO,
                                      STDOUT_FILENO, STDERR_FILENO,
                                      client::make_client_options("", kTimeoutSeconds));
}
