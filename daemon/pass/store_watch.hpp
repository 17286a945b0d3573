#pragma once
// What the pass backend's cache must follow, as SecretServiceWatch does for
// the Secret Service: the store's files (inotify on the store's root and on
// hostkeeper/: `pass insert`, `pass rm`, `pass git pull`, a new .gpg-id) and
// gpg-agent's passphrase cache. Once a second, while the daemon holds
// answers decrypted with a passphrase-protected key, it asks gpg-agent
// (KEYINFO) whether that passphrase is still cached; when it expired or
// was cleared (`gpgconf --reload gpg-agent`), or gpg-agent is gone, the
// cache is dropped, so that no token is served that could not be read now
// (the pass backend's "locked means locked").
//
// keyring_watched(false) while the store cannot be watched (no store yet,
// no inotify): nothing is cached then. Events are posted to `io` and
// coalesced.

#include <boost/asio/any_io_executor.hpp>
#include <memory>

#include "daemon/credentials/keyring_events.hpp"

namespace hostkeeper::daemon::pass {

class PassKeyring;

class StoreWatch {
  public:
    StoreWatch(boost::asio::any_io_executor io, credentials::KeyringEvents& events,
               PassKeyring& keyring);
    StoreWatch(const StoreWatch&) = delete;
    StoreWatch& operator=(const StoreWatch&) = delete;
    ~StoreWatch();

    struct State;

  private:
    std::shared_ptr<State> state_;
};

}  // namespace hostkeeper::daemon::pass
