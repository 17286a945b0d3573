#pragma once
// The keyring the daemon uses, chosen by keyring.backend: the Secret
// Service, `pass`, or with "auto" the Secret Service when it answers on the
// session bus and has a default collection, else pass when its store is
// initialized. When nothing can be used, every call probes again (so a
// `pass init` or a keyring started later is found without a restart) and
// fails with keyring_unavailable saying what was tried and how to set up
// either. An explicitly chosen backend is never replaced by the other.
//
// It owns the chosen backend and the watch that keeps the cache in step
// with it (SecretServiceWatch, pass::StoreWatch). Keyring calls and
// `switch_to` run on the worker thread; watches are made and dropped on
// the event loop (they report to the credential service there); `state()`
// may be called from any thread.

#include <boost/asio/any_io_executor.hpp>
#include <memory>
#include <mutex>

#include "daemon/backends/backend_options.hpp"
#include "daemon/backends/keyring_admin.hpp"
#include "daemon/backends/keyring_state.hpp"
#include "daemon/credentials/keyring.hpp"
#include "daemon/credentials/keyring_events.hpp"

namespace hostkeeper::daemon::backends {

class ChosenKeyring final : public credentials::Keyring, public KeyringAdmin {
  public:
    // `io`: the event loop; `worker`: the keyring worker thread.
    ChosenKeyring(boost::asio::any_io_executor io, boost::asio::any_io_executor worker,
                  BackendOptions options);
    ~ChosenKeyring() override;

    // On the event loop's thread, before it runs: chooses a backend (on the
    // worker, waiting for it) and starts its watch, reporting to `events`.
    void attach(credentials::KeyringEvents& events);
    // On the event loop: stops the watch.
    void detach();

    std::optional<credentials::StoredItem> lookup(const credentials::ItemKey& key) override;
    void store(const credentials::StoredItem& item) override;
    bool remove(const credentials::ItemKey& key) override;
    std::vector<credentials::ListedItem> list(credentials::ItemKind kind) override;
    void unlock() override;  // Keyring's (worker thread)
    std::string_view name() const override;

    KeyringState state() const override;
    boost::asio::awaitable<MigrationResult> migrate_to(std::string backend) override;
    boost::asio::awaitable<void> unlock_keyring(std::optional<proto::Secret> password) override;

    // Worker thread: a backend of the given name, opened to be used beside
    // the chosen one (migration); throws keyring_unavailable when it cannot
    // be used, bad_request for an unknown name.
    std::unique_ptr<credentials::Keyring> open(std::string_view backend);
    // The backend in use now (worker thread); throws when none can be used.
    credentials::Keyring& current();
    // Worker thread: use `backend` (from open()) from now on.
    void switch_to(std::unique_ptr<credentials::Keyring> backend, std::string reason);

    struct Impl;

  private:
    std::shared_ptr<Impl> impl_;
};

}  // namespace hostkeeper::daemon::backends
