#pragma once
// The requests about what the keyring holds, read from the keyring itself:
// `list` (every host's item, its field names, never a value), `check` (is
// a host's token still good, asked of the host), `rotate` (a new user token
// for an HCP Terraform or Terraform Enterprise host), `login_start`,
// `login_exchange` and `login_refresh` (hostkeeper login), the Docker credential
// helper's docker_get, docker_store, docker_erase and docker_list, and the
// git credential helper's git_get, git_store and git_erase (PROTOCOL.md).

#include <boost/asio/awaitable.hpp>
#include <optional>
#include <string>

#include "daemon/handlers/request_fields.hpp"
#include "daemon/server/request_handler.hpp"
#include "proto/secret.hpp"

namespace hostkeeper::daemon::credentials {
class CredentialService;
class KeyringItems;
}  // namespace hostkeeper::daemon::credentials
namespace hostkeeper::daemon::discovery {
class DiscoveryService;
}
namespace hostkeeper::daemon::backends {
class KeyringAdmin;
}

namespace hostkeeper::daemon::handlers {

class ItemRequests {
  public:
    ItemRequests(credentials::KeyringItems& items, credentials::CredentialService& credentials,
                 discovery::DiscoveryService& discovery, backends::KeyringAdmin& keyring)
        : items_(items), credentials_(credentials), discovery_(discovery), keyring_(keyring) {}
    // Throws proto::Error.
    boost::asio::awaitable<server::Reply> handle(const Request& request);

  private:
    boost::asio::awaitable<server::Reply> list();
    boost::asio::awaitable<server::Reply> check(std::string host);
    boost::asio::awaitable<server::Reply> rotate(std::string host);
    boost::asio::awaitable<server::Reply> login(const Request& request);
    boost::asio::awaitable<server::Reply> docker(const Request& request);
    boost::asio::awaitable<server::Reply> git_get(const Request& request);
    boost::asio::awaitable<server::Reply> git_store(const Request& request);
    boost::asio::awaitable<server::Reply> git_erase(const Request& request);
    // The host's Terraform token (its credentials' "token"), read as `get`
    // reads it; nullopt when there is none or it is withheld (refused, expired).
    boost::asio::awaitable<std::optional<proto::Secret>> terraform_token(std::string host);

    credentials::KeyringItems& items_;
    credentials::CredentialService& credentials_;
    discovery::DiscoveryService& discovery_;
    backends::KeyringAdmin& keyring_;
};

}  // namespace hostkeeper::daemon::handlers
