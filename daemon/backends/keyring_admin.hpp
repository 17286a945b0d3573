#pragma once
// What the socket's keyring requests (status, migrate, unlock) ask of the
// keyring backends; ChosenKeyring implements it, unit tests fake it.

#include <boost/asio/awaitable.hpp>
#include <optional>
#include <string>

#include "daemon/backends/keyring_state.hpp"
#include "daemon/backends/migration.hpp"
#include "proto/secret.hpp"

namespace hostkeeper::daemon::backends {

class KeyringAdmin {
  public:
    KeyringAdmin() = default;
    KeyringAdmin(const KeyringAdmin&) = delete;
    KeyringAdmin& operator=(const KeyringAdmin&) = delete;
    virtual ~KeyringAdmin() = default;

    virtual KeyringState state() const = 0;
    // Moves every item of the backend in use to `backend` (migration.hpp);
    // when none failed, the daemon uses `backend` from then on. Throws
    // proto::Error: bad_request for an unknown backend or the one in use,
    // keyring_unavailable when either cannot be used (nothing changed).
    virtual boost::asio::awaitable<MigrationResult> migrate_to(std::string backend) = 0;
    // Keyring::unlock of the backend in use; with a password, the Secret
    // Service's default collection unlocked with it (no prompt:
    // libsecret's unlock_with_password), bad_request with pass.
    virtual boost::asio::awaitable<void> unlock_keyring(std::optional<proto::Secret> password) = 0;
};

}  // namespace hostkeeper::daemon::backends
