#pragma once
// The Secret Service (gnome-keyring, KeePassXC, ...) through libsecret.
// The cold path (a lookup the daemon has not cached) costs SearchItems and
// GetSecret on a kept connection: no item proxies.
// Each kind of item has its schema, attributes and label (item_schemas.hpp);
// items are made in the default collection. The adapter's parts: bounded
// calls (bounded_calls), unlocking (secret_unlock), searching, also for the
// locked items a search cannot see (secret_search), and the items
// themselves (secret_items).
//
// Every D-Bus call is bounded: an unlock prompt by `unlock_timeout`, any other
// call by the shorter of `unlock_timeout` and 10 s, so that a stopped or hung Secret Service is an
// error (keyring_unavailable) and never a request that waits forever. A call that fails because the
// connection went stale (the service was restarted: its old bus name and session are gone) is
// retried once on a new connection.

#include <atomic>
#include <chrono>
#include <memory>
#include <string>

#include "daemon/credentials/keyring.hpp"
#include "proto/secret.hpp"

namespace hostkeeper::daemon::libsecret {

class CallWatchdog;

class LibsecretKeyring final : public credentials::Keyring {
  public:
    explicit LibsecretKeyring(std::chrono::milliseconds unlock_timeout);
    ~LibsecretKeyring() override;

    std::optional<credentials::StoredItem> lookup(const credentials::ItemKey& key) override;
    void store(const credentials::StoredItem& item) override;
    bool remove(const credentials::ItemKey& key) override;
    std::vector<credentials::ListedItem> list(credentials::ItemKind kind) override;
    void unlock() override;
    std::string_view name() const override { return "secret-service"; }
    // Unlocks the default collection with its password, which the user
    // typed where no prompt could be shown (secret_unlock.hpp's
    // unlock_with_password: gnome-keyring only). Worker thread.
    void unlock_with_password(const proto::Secret& password);

    // Whether this process can use the Secret Service: a session bus
    // (proto::session_bus_address; no autolaunch), a service answering on
    // it, and a default collection. `detail` says what was found or why not.
    // Never prompts. Worker thread.
    struct Probe {
        bool usable = false;
        std::string detail;
    };
    Probe probe();

    // Any thread: the Secret Service's bus name changed owner (restarted,
    // gone, back); the next call starts on a new connection.
    void service_replaced();

  private:
    template <typename Operation>
    auto run(Operation operation);

    std::chrono::milliseconds unlock_timeout_;
    std::chrono::milliseconds call_timeout_;
    std::atomic<bool> replaced_{false};
    std::unique_ptr<CallWatchdog> watchdog_;
};

}  // namespace hostkeeper::daemon::libsecret
