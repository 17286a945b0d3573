#pragma once
// The keyring as the credential service sees it: one secret per normalized
// host. Implementations block (D-Bus round trips, unlock prompts) and are
// called from one worker thread, never from the event loop.

#include <optional>
#include <string>

#include "proto/secret.hpp"

namespace hostkeeper::daemon::credentials {

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
};

}  // namespace hostkeeper::daemon::credentials
