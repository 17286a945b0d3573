#pragma once
// The Docker view of the keyring (docker-credential-hostkeeper): one
// username and secret per server URL as the Docker client names it, the
// port's items of kind docker. The same rules as the port's: a locked item
// is keyring_locked, never absent. Blocks as the port does (worker thread).

#include <optional>
#include <string>
#include <vector>

#include "daemon/credentials/keyring.hpp"

namespace hostkeeper::daemon::credentials {

struct DockerItemInfo {
    std::string server;
    std::optional<std::string> username;  // nullopt: only readable with the secret, and locked
    std::string label;
    std::optional<WallTime> stored;
};

class DockerItems {
  public:
    explicit DockerItems(Keyring& keyring) : keyring_(keyring) {}

    std::optional<DockerCredentials> lookup(const std::string& server);
    void store(const DockerCredentials& credentials);
    bool remove(const std::string& server);
    // Listed without reading a secret where the backend can (the username
    // is then known), sorted by server.
    std::vector<DockerItemInfo> items();

  private:
    Keyring& keyring_;
};

}  // namespace hostkeeper::daemon::credentials
