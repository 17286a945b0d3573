#pragma once
// The keyring as the credential service sees it: one secret per normalized
// host. Implementations block (D-Bus round trips, unlock prompts) and are
// called from one worker thread, never from the event loop.

#include <chrono>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "proto/secret.hpp"

namespace hostkeeper::daemon::credentials {

using WallTime = std::chrono::system_clock::time_point;

// A host's item as the keyring describes it, without its secret.
struct ItemInfo {
    std::string host;                // normalized
    std::string label;               // the item's label; pass: the entry's name
    std::optional<WallTime> stored;  // when it was last written, where the backend knows
};

// Docker credentials (docker-credential-hostkeeper): items of their own
// kind, keyed by the server URL as the Docker client names it.
struct DockerCredentials {
    std::string server;
    std::string username;
    proto::Secret secret;
};

struct DockerItemInfo {
    std::string server;
    std::optional<std::string> username;  // nullopt: only readable with the secret, and locked
    std::string label;
    std::optional<WallTime> stored;
};

class Keyring {
  public:
    Keyring() = default;
    Keyring(const Keyring&) = delete;
    Keyring& operator=(const Keyring&) = delete;
    virtual ~Keyring() = default;

    // The stored secret text, or nullopt when the keyring has no item for
    // the host. Never reports a locked item as missing: throws
    // proto::Error{keyring_locked}, as it throws keyring_unavailable,
    // no_default_collection or keyring_error for the other failures.
    virtual std::optional<proto::Secret> lookup(const std::string& host) = 0;
    // Creates or replaces the host's item.
    virtual void store(const std::string& host, const proto::Secret& credentials) = 0;
    // Removes the host's item; false when there was none.
    virtual bool remove(const std::string& host) = 0;
    // Every host with an item, normalized, sorted, without reading a secret
    // (so locked items are listed too).
    virtual std::vector<std::string> hosts() = 0;
    // The same hosts with what the keyring says of each item, sorted by host.
    virtual std::vector<ItemInfo> items() = 0;

    // Docker credentials: the same rules (a locked item is keyring_locked,
    // never absent). docker_items() lists them without reading a secret
    // where the backend can (the username is then known), sorted by server.
    virtual std::optional<DockerCredentials> docker_lookup(const std::string& server) = 0;
    virtual void docker_store(const DockerCredentials& credentials) = 0;
    virtual bool docker_remove(const std::string& server) = 0;
    virtual std::vector<DockerItemInfo> docker_items() = 0;
    // Unlocks what `lookup` needs, where the keyring itself can ask the user
    // (a Secret Service prompt); throws keyring_locked where only the user's
    // terminal can (gpg-agent's pinentry: `hostkeeper unlock`).
    virtual void unlock() = 0;
    // "secret-service" or "pass", as config.toml's keyring.backend says it.
    virtual std::string_view name() const = 0;
};

}  // namespace hostkeeper::daemon::credentials
