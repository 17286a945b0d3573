#pragma once
// The keyring port: one store of items, each named by its kind and its key
// (a Terraform host, a Docker server URL, a git credential's URL). The
// Terraform view (host -> credentials), the Docker view (server -> username
// and secret) and the git view (URL -> password) sit above it
// (terraform_items.hpp, docker_items.hpp, git_items.hpp). Each kind is
// described once (item_kinds.hpp): a backend maps it to its own naming from
// that description (the Secret Service's schemas, pass's folders) and knows
// nothing else of what an item is for.
// Implementations block (D-Bus round trips, unlock prompts) and are called
// from one worker thread, never from the event loop.

#include <chrono>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "daemon/credentials/item_kinds.hpp"
#include "proto/secret.hpp"

namespace hostkeeper::daemon::credentials {

using WallTime = std::chrono::system_clock::time_point;

struct ItemKey {
    ItemKind kind = ItemKind::terraform;
    // The normalized host; the server URL as the Docker client names it;
    // git: "https://USER@HOST[/PATH]" (proto/git_credential.hpp).
    std::string key;
};

// An item with its secret.
struct StoredItem {
    ItemKey key;
    // docker, git: the account (git's is also in the key); empty for a kind without one.
    std::string username;
    proto::Secret secret;
};

// An item as the keyring describes it, without its secret.
struct ListedItem {
    std::string key;
    // docker: nullopt when only readable with the secret, and that is
    // locked; always nullopt for a kind without a username.
    std::optional<std::string> username;
    std::string label;               // the item's label; pass: the entry's name
    std::optional<WallTime> stored;  // when it was last written, where the backend knows
};

// Docker credentials as the Docker view and pass's entries hold them.
struct DockerCredentials {
    std::string server;
    std::string username;
    proto::Secret secret;
};

class Keyring {
  public:
    Keyring() = default;
    Keyring(const Keyring&) = delete;
    Keyring& operator=(const Keyring&) = delete;
    virtual ~Keyring() = default;

    // The item, or nullopt when the keyring has none. Never reports a locked
    // item as missing: throws proto::Error{keyring_locked}, as it throws
    // keyring_unavailable, no_default_collection or keyring_error for the
    // other failures.
    virtual std::optional<StoredItem> lookup(const ItemKey& key) = 0;
    // Creates or replaces the key's item (one item per key).
    virtual void store(const StoredItem& item) = 0;
    // Removes the key's item; false when there was none.
    virtual bool remove(const ItemKey& key) = 0;
    // The kind's items, sorted by key, without reading a secret where the
    // backend can (locked items are listed too). The Secret Service may list
    // more than one item for a key.
    virtual std::vector<ListedItem> list(ItemKind kind) = 0;
    // Unlocks what `lookup` needs, where the keyring itself can ask the user
    // (a Secret Service prompt); throws keyring_locked where only the user's
    // terminal can (gpg-agent's pinentry: `hostkeeper unlock`).
    virtual void unlock() = 0;
    // "secret-service" or "pass", as config.toml's keyring.backend says it.
    virtual std::string_view name() const = 0;
};

}  // namespace hostkeeper::daemon::credentials
