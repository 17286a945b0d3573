#pragma once
// The Terraform view of the keyring: one credentials JSON object per
// normalized host, the port's items of kind terraform. Blocks as the port
// does (worker thread).

#include <optional>
#include <string>
#include <vector>

#include "daemon/credentials/keyring.hpp"
#include "proto/secret.hpp"

namespace hostkeeper::daemon::credentials {

// A host's item as the keyring describes it, without its secret.
struct ItemInfo {
    std::string host;                // normalized
    std::string label;               // the item's label; pass: the entry's name
    std::optional<WallTime> stored;  // when it was last written, where the backend knows
};

// The "token" string of a host's stored credentials object (compact JSON
// text), as Terraform sends it; nullopt when it has none, it is not a
// string, or the text is not a JSON object.
std::optional<proto::Secret> token_of(const proto::Secret& credentials);

class TerraformItems {
  public:
    explicit TerraformItems(Keyring& keyring) : keyring_(keyring) {}

    // The stored secret text, or nullopt when the keyring has no item for
    // the host (a locked item throws keyring_locked: Keyring::lookup).
    std::optional<proto::Secret> lookup(const std::string& host);
    // Creates or replaces the host's item.
    void store(const std::string& host, const proto::Secret& credentials);
    // Removes the host's item; false when there was none.
    bool remove(const std::string& host);
    // Every host with an item, normalized, sorted, once each, without
    // reading a secret (so locked items are listed too).
    std::vector<std::string> hosts();
    // The same hosts with what the keyring says of each item, sorted by host.
    std::vector<ItemInfo> items();

  private:
    Keyring& keyring_;
};

}  // namespace hostkeeper::daemon::credentials
