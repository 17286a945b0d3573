#include "daemon/backends/chosen_keyring.hpp"

#include <spdlog/spdlog.h>

#include <boost/asio/post.hpp>
#include <future>

#include "daemon/async/on_worker.hpp"
#include "daemon/backends/migration.hpp"
#include "daemon/libsecret/libsecret_keyring.hpp"
#include "daemon/libsecret/secret_service_watch.hpp"
#include "daemon/pass/pass_keyring.hpp"
#include "daemon/pass/store_layout.hpp"
#include "daemon/pass/store_watch.hpp"
#include "proto/error.hpp"

namespace hostkeeper::daemon::backends {
namespace asio = boost::asio;
namespace fs = std::filesystem;
using proto::Error;
using proto::ErrorCode;

namespace {

const char* const kSetUp =
    "set up either: a Secret Service (gnome-keyring-daemon or KeePassXC) with a default "
    "collection in your session, or a pass store: `gpg --quick-gen-key 'Your Name "
    "<you@example.com>'` then `pass init <that key id>`";

struct Choice {
    std::shared_ptr<credentials::Keyring> backend;
    KeyringState state;
};

}  // namespace

struct ChosenKeyring::Impl : std::enable_shared_from_this<ChosenKeyring::Impl> {
    asio::any_io_executor io;
    asio::any_io_executor worker;
    BackendOptions options;
    credentials::KeyringEvents* events = nullptr;

    mutable std::mutex mutex;  // backend and state: written on the worker, read anywhere
    std::shared_ptr<credentials::Keyring> backend;
    KeyringState state;

    // Event loop only.
    std::unique_ptr<libsecret::SecretServiceWatch> ss_watch;
    std::unique_ptr<pass::StoreWatch> pass_watch;
    std::shared_ptr<credentials::Keyring> watched_backend;  // outlives its watch

    std::shared_ptr<pass::PassKeyring> make_pass() const {
        return std::make_shared<pass::PassKeyring>(options.password_store_dir);
    }
    std::shared_ptr<libsecret::LibsecretKeyring> make_secret_service() const {
        return std::make_shared<libsecret::LibsecretKeyring>(options.unlock_timeout);
    }

    // Worker thread.
    Choice choose() const {
        Choice c;
        c.state.configured = options.backend;
        if (options.backend == kSecretService) {
            c.backend = make_secret_service();
            c.state.reason = "keyring.backend is \"secret-service\"";
        } else if (options.backend == kPass) {
            c.backend = make_pass();
            c.state.reason = "keyring.backend is \"pass\"";
        } else {
            auto ss = make_secret_service();
            const libsecret::LibsecretKeyring::Probe probe = ss->probe();
            c.state.tried.push_back({std::string(kSecretService), probe.usable, probe.detail});
            if (probe.usable) {
                c.backend = std::move(ss);
                c.state.reason = "auto: " + probe.detail;
            } else {
                const fs::path store = pass::resolve_store_dir(options.password_store_dir);
                if (pass::is_initialized(store)) {
                    c.state.tried.push_back(
                        {std::string(kPass), true,
                         "a password store is initialized at " + store.string()});
                    c.backend = make_pass();
                    c.state.reason = "auto: no usable Secret Service (" + probe.detail +
                                     "); a password store is initialized at " + store.string();
                } else {
                    c.state.tried.push_back({std::string(kPass), false,
                                             "no password store at " + store.string() +
                                                 " (no .gpg-id: `pass init` was not run there)"});
                    c.state.reason =
                        "no keyring backend can be used: the Secret Service: " + probe.detail +
                        "; pass: no password store at " + store.string() + "; " + kSetUp;
                }
            }
        }
        if (c.backend) c.state.backend = std::string(c.backend->name());
        return c;
    }

    // Makes `choice` current and says so in the log; its backend.
    std::shared_ptr<credentials::Keyring> install(Choice choice) {
        {
            const std::lock_guard lock(mutex);
            backend = choice.backend;
            state = std::move(choice.state);
        }
        if (state.backend)
            spdlog::info("keyring backend: {} ({})", *state.backend, state.reason);
        else
            spdlog::warn("{}", state.reason);
        return choice.backend;
    }

    // Worker thread: install() and have the event loop watch it.
    void adopt(Choice choice) {
        std::shared_ptr<credentials::Keyring> chosen = install(std::move(choice));
        if (events == nullptr) return;
        // Before the answer of the call that chose it reaches the cache:
        // nothing read before is kept, and nothing is cached until the new
        // watch stands.
        auto self = shared_from_this();
        asio::post(io, [self, chosen = std::move(chosen)] { self->watch(chosen); });
    }

    // Event loop.
    void watch(const std::shared_ptr<credentials::Keyring>& chosen) {
        events->keyring_watched(false);
        events->keyring_changed();
        ss_watch.reset();
        pass_watch.reset();
        watched_backend = chosen;
        if (!chosen) return;
        if (auto* ss = dynamic_cast<libsecret::LibsecretKeyring*>(chosen.get())) {
            ss_watch = std::make_unique<libsecret::SecretServiceWatch>(
                io, *events, [ss] { ss->service_replaced(); });
        } else if (auto* p = dynamic_cast<pass::PassKeyring*>(chosen.get())) {
            pass_watch = std::make_unique<pass::StoreWatch>(io, *events, *p);
        }
    }

    // Worker thread.
    credentials::Keyring& current() {
        std::shared_ptr<credentials::Keyring> b;
        {
            const std::lock_guard lock(mutex);
            b = backend;
        }
        if (!b) {
            adopt(choose());
            const std::lock_guard lock(mutex);
            b = backend;
            if (!b) throw Error(ErrorCode::keyring_unavailable, state.reason);
        }
        return *b;
    }
};

ChosenKeyring::ChosenKeyring(asio::any_io_executor io, asio::any_io_executor worker,
                             BackendOptions options)
    : impl_(std::make_shared<Impl>()) {
    impl_->io = std::move(io);
    impl_->worker = std::move(worker);
    impl_->options = std::move(options);
    impl_->state.configured = impl_->options.backend;
    impl_->state.reason = "not chosen yet";
}

ChosenKeyring::~ChosenKeyring() = default;

void ChosenKeyring::attach(credentials::KeyringEvents& events) {
    impl_->events = &events;
    // Probing talks to D-Bus: on the worker, whose thread owns libsecret's proxies.
    std::promise<Choice> chosen;
    std::future<Choice> result = chosen.get_future();
    asio::post(impl_->worker, [this, &chosen] {
        try {
            chosen.set_value(impl_->choose());
        } catch (...) {
            chosen.set_exception(std::current_exception());
        }
    });
    impl_->watch(impl_->install(result.get()));
}

void ChosenKeyring::detach() {
    impl_->ss_watch.reset();
    impl_->pass_watch.reset();
    impl_->watched_backend.reset();
}

std::optional<credentials::StoredItem> ChosenKeyring::lookup(const credentials::ItemKey& key) {
    return impl_->current().lookup(key);
}

void ChosenKeyring::store(const credentials::StoredItem& item) {
    impl_->current().store(item);
}

bool ChosenKeyring::remove(const credentials::ItemKey& key) {
    return impl_->current().remove(key);
}

std::vector<credentials::ListedItem> ChosenKeyring::list(credentials::ItemKind kind) {
    return impl_->current().list(kind);
}

void ChosenKeyring::unlock() {
    impl_->current().unlock();
}

std::string_view ChosenKeyring::name() const {
    const std::lock_guard lock(impl_->mutex);
    return impl_->backend ? impl_->backend->name() : std::string_view("none");
}

KeyringState ChosenKeyring::state() const {
    KeyringState s;
    std::shared_ptr<credentials::Keyring> b;
    {
        const std::lock_guard lock(impl_->mutex);
        s = impl_->state;
        b = impl_->backend;
    }
    if (auto* p = dynamic_cast<pass::PassKeyring*>(b.get())) {
        s.store = p->store_dir();
        s.store_writable = pass::store_writable(p->store_dir());
    }
    return s;
}

std::unique_ptr<credentials::Keyring> ChosenKeyring::open(std::string_view backend) {
    if (backend == kPass) {
        auto p = std::make_unique<pass::PassKeyring>(impl_->options.password_store_dir);
        if (!pass::is_initialized(p->store_dir())) {
            throw Error(ErrorCode::keyring_unavailable,
                        "pass cannot be used: no password store at " + p->store_dir().string() +
                            " (no .gpg-id): run `pass init YOUR-GPG-KEY-ID` first");
        }
        return p;
    }
    if (backend == kSecretService) {
        auto ss = std::make_unique<libsecret::LibsecretKeyring>(impl_->options.unlock_timeout);
        const libsecret::LibsecretKeyring::Probe probe = ss->probe();
        if (!probe.usable)
            throw Error(ErrorCode::keyring_unavailable,
                        "the Secret Service cannot be used: " + probe.detail);
        return ss;
    }
    throw Error(ErrorCode::bad_request, "unknown keyring backend \"" + std::string(backend) +
                                            "\" (secret-service or pass)");
}

credentials::Keyring& ChosenKeyring::current() {
    return impl_->current();
}

void ChosenKeyring::switch_to(std::unique_ptr<credentials::Keyring> backend, std::string reason) {
    Choice c;
    c.state.configured = impl_->options.backend;
    c.state.reason = std::move(reason);
    c.state.backend = std::string(backend->name());
    c.backend = std::shared_ptr<credentials::Keyring>(std::move(backend));
    impl_->adopt(std::move(c));
}

}  // namespace hostkeeper::daemon::backends

namespace hostkeeper::daemon::backends {

asio::awaitable<MigrationResult> ChosenKeyring::migrate_to(std::string backend) {
    auto work = [this, backend]() -> MigrationResult {
        if (!is_backend_name(backend))
            throw Error(ErrorCode::bad_request,
                        "unknown keyring backend \"" + backend + "\" (secret-service or pass)");
        credentials::Keyring& from = current();
        if (from.name() == backend)
            throw Error(ErrorCode::bad_request, "hostkeeperd already uses " + backend);
        std::unique_ptr<credentials::Keyring> to = open(backend);
        MigrationResult result = migrate(from, *to);
        if (result.switched)
            switch_to(std::move(to), "hostkeeper migrate --to " + backend +
                                         " moved every item here from " + result.from);
        return result;
    };
    auto moving = async::on_worker(impl_->worker, std::move(work));  // named first
    co_return co_await std::move(moving);
}

asio::awaitable<void> ChosenKeyring::unlock_keyring(std::optional<proto::Secret> password) {
    // The coroutine's frame holds the password until the work is done.
    auto work = [this, &password] {
        if (!password) return current().unlock();
        auto* secret_service = dynamic_cast<libsecret::LibsecretKeyring*>(&current());
        if (secret_service == nullptr)
            throw Error(ErrorCode::bad_request,
                        "hostkeeperd takes a password only for the Secret Service; with pass, "
                        "gpg-agent asks for the passphrase (hostkeeper unlock in a terminal)");
        secret_service->unlock_with_password(*password);
    };
    auto unlocking = async::on_worker(impl_->worker, std::move(work));  // named first
    co_await std::move(unlocking);
}

}  // namespace hostkeeper::daemon::backends
