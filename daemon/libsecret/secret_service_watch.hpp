#pragma once
// Watches the Secret Service on the session bus so that what hostkeeperd
// caches follows the keyring: any signal the service sends about its items
// or collections (ItemCreated, ItemChanged, ItemDeleted, Collection*, a
// PropertiesChanged that touches Locked) and any change of owner of
// org.freedesktop.secrets (restarted, gone, back) is reported as
// keyring_changed(). Whether the watch stands is reported as
// keyring_watched(): false until the subscription is confirmed, and again
// when the bus connection is lost (retried every few seconds).
//
// Runs a GLib main loop on a thread of its own with its own bus connection;
// the events are posted to `io` and coalesced (a burst, such as the one
// signal per item a lock sends, costs one invalidation). Signals only ever
// drop cached answers, so a client that fakes them can cost keyring
// lookups, never serve a token.

#include <boost/asio/any_io_executor.hpp>
#include <chrono>
#include <functional>
#include <memory>
#include <utility>

#include "daemon/credentials/keyring_events.hpp"

namespace hostkeeper::daemon::libsecret {

class SecretServiceWatch {
  public:
    // `service_replaced` is called on the watch's thread when the owner of
    // org.freedesktop.secrets changed. Waits up to `settle` for the watch to
    // stand before returning (the first report is made at once either way).
    SecretServiceWatch(boost::asio::any_io_executor io, credentials::KeyringEvents& events,
                       std::function<void()> service_replaced,
                       std::chrono::milliseconds settle = std::chrono::seconds(2));
    SecretServiceWatch(const SecretServiceWatch&) = delete;
    SecretServiceWatch& operator=(const SecretServiceWatch&) = delete;
    ~SecretServiceWatch();

    struct State;

  private:
    std::shared_ptr<State> state_;
};

}  // namespace hostkeeper::daemon::libsecret
