#pragma once
// What a watch on the keyring reports to those who cache what it holds.
// Called on the event loop only.

namespace hostkeeper::daemon::credentials {

class KeyringEvents {
  public:
    KeyringEvents() = default;
    KeyringEvents(const KeyringEvents&) = delete;
    KeyringEvents& operator=(const KeyringEvents&) = delete;
    virtual ~KeyringEvents() = default;

    // Something in the keyring changed (an item created, changed or deleted,
    // a collection locked or unlocked, the service restarted or gone): any
    // answer read from it before may be stale.
    virtual void keyring_changed() = 0;
    // Whether changes are being watched. While they are not, nothing read
    // from the keyring may be kept.
    virtual void keyring_watched(bool watched) = 0;
};

}  // namespace hostkeeper::daemon::credentials
