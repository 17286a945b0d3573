#pragma once
// What a Docker client is answered for a registry server, by the Docker
// credential helper and by the fleet tier alike: the keyring's Docker item
// for the server, else for its other spelling (proto::other_docker_server:
// OpenTofu's https://HOST for Docker's HOST), else, where either spelling
// names a host with a token_command and a token_username, the command's
// token as that user's password.

#include <boost/asio/awaitable.hpp>
#include <optional>
#include <string>

#include "daemon/credentials/keyring.hpp"

namespace hostkeeper::daemon::credentials {

class CommandTokens;
class KeyringItems;

// nullopt: neither answers (`commands` may be nullptr). Throws
// proto::Error: token_command_failed, the command's failure; the keyring's
// (locked, absent) when no command answers instead.
boost::asio::awaitable<std::optional<DockerCredentials>> docker_credentials(KeyringItems& items,
                                                                            CommandTokens* commands,
                                                                            std::string server);

}  // namespace hostkeeper::daemon::credentials
