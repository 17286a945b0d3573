#pragma once
// What the keyring holds, read from the keyring itself rather than the
// credential cache: the hosts' items as a list (`list`), and the Docker
// credentials of docker-credential-hostkeeper, which are never cached (every
// read asks the keyring, so its lock rules are the keyring's own). Keyring
// calls run on the worker executor, as the credential service's do.

#include <boost/asio/any_io_executor.hpp>
#include <boost/asio/awaitable.hpp>
#include <optional>
#include <string>
#include <vector>

#include "daemon/credentials/docker_items.hpp"
#include "daemon/credentials/keyring.hpp"
#include "daemon/credentials/terraform_items.hpp"

namespace hostkeeper::daemon::credentials {

class KeyringItems {
  public:
    KeyringItems(boost::asio::any_io_executor worker, Keyring& keyring)
        : worker_(std::move(worker)), keyring_(keyring) {}

    boost::asio::awaitable<std::vector<ItemInfo>> items();
    boost::asio::awaitable<std::optional<DockerCredentials>> docker_get(std::string server);
    boost::asio::awaitable<void> docker_store(DockerCredentials credentials);
    boost::asio::awaitable<bool> docker_erase(std::string server);
    boost::asio::awaitable<std::vector<DockerItemInfo>> docker_items();

  private:
    boost::asio::any_io_executor worker_;
    Keyring& keyring_;
};

}  // namespace hostkeeper::daemon::credentials
