#include "daemon/libsecret/secret_service_watch.hpp"

#include <gio/gio.h>
#include <spdlog/spdlog.h>

#include <atomic>
#include <boost/asio/post.hpp>
#include <future>
#include <string>
#include <string_view>
#include <thread>

namespace hostkeeper::daemon::libsecret {
namespace asio = boost::asio;

namespace {
constexpr const char* kSecrets = "org.freedesktop.secrets";
constexpr guint kRetrySeconds = 5;

// PropertiesChanged (sa{sv}as): does it change or invalidate Locked? Items
// and Label do not change an answer: ItemCreated and ItemDeleted come too.
bool touches_locked(GVariant* parameters) {
    if (!g_variant_is_of_type(parameters, G_VARIANT_TYPE("(sa{sv}as)"))) return true;
    GVariant* changed = g_variant_get_child_value(parameters, 1);
    GVariant* locked = g_variant_lookup_value(changed, "Locked", nullptr);
    const bool in_changed = locked != nullptr;
    if (locked != nullptr) g_variant_unref(locked);
    g_variant_unref(changed);
    if (in_changed) return true;
    GVariant* invalidated = g_variant_get_child_value(parameters, 2);
    bool in_invalidated = false;
    const gsize n = g_variant_n_children(invalidated);
    for (gsize i = 0; i < n && !in_invalidated; ++i) {
        const gchar* name = nullptr;
        g_variant_get_child(invalidated, i, "&s", &name);
        in_invalidated = name != nullptr && std::string_view(name) == "Locked";
    }
    g_variant_unref(invalidated);
    return in_invalidated;
}

}  // namespace

struct SecretServiceWatch::State : std::enable_shared_from_this<State> {
    State(asio::any_io_executor executor, credentials::KeyringEvents& keyring_events,
          std::function<void()> replaced)
        : io(std::move(executor)), events(&keyring_events), service_replaced(std::move(replaced)) {}
    State(const State&) = delete;
    State& operator=(const State&) = delete;
    ~State() {
        g_object_unref(cancellable);
        g_main_loop_unref(loop);
        g_main_context_unref(context);
    }

    // The watch's thread.
    void run() {
        g_main_context_push_thread_default(context);
        if (!connect()) schedule_retry();
        if (!stopping) g_main_loop_run(loop);
        drop_connection();
        g_main_context_pop_thread_default(context);
    }

    // Any thread but the watch's.
    void stop() {
        stopping = true;
        g_cancellable_cancel(cancellable);
        GSource* quit = g_idle_source_new();
        g_source_set_callback(
            quit,
            [](gpointer l) -> gboolean {
                g_main_loop_quit(static_cast<GMainLoop*>(l));
                return G_SOURCE_REMOVE;
            },
            loop, nullptr);
        g_source_attach(quit, context);
        g_source_unref(quit);
        if (thread.joinable()) thread.join();
    }

    bool connect() {
        GError* error = nullptr;
        gchar* address = g_dbus_address_get_for_bus_sync(G_BUS_TYPE_SESSION, cancellable, &error);
        if (address != nullptr) {
            connection = g_dbus_connection_new_for_address_sync(
                address,
                static_cast<GDBusConnectionFlags>(G_DBUS_CONNECTION_FLAGS_AUTHENTICATION_CLIENT |
                                                  G_DBUS_CONNECTION_FLAGS_MESSAGE_BUS_CONNECTION),
                nullptr, cancellable, &error);
            g_free(address);
        }
        if (connection == nullptr) return cannot_watch(error);
        g_dbus_connection_set_exit_on_close(connection, FALSE);
        closed_handler = g_signal_connect(connection, "closed", G_CALLBACK(on_closed), this);
        secrets_subscription = g_dbus_connection_signal_subscribe(
            connection, kSecrets, nullptr, nullptr, nullptr, nullptr, G_DBUS_SIGNAL_FLAGS_NONE,
            on_secrets_signal, this, nullptr);
        owner_subscription = g_dbus_connection_signal_subscribe(
            connection, "org.freedesktop.DBus", "org.freedesktop.DBus", "NameOwnerChanged",
            "/org/freedesktop/DBus", kSecrets, G_DBUS_SIGNAL_FLAGS_NONE, on_owner_changed, this,
            nullptr);
        // The bus handles a connection's messages in order: once it answered
        // this call, it has our match rules, so no signal can slip by.
        GVariant* reply = g_dbus_connection_call_sync(
            connection, "org.freedesktop.DBus", "/org/freedesktop/DBus", "org.freedesktop.DBus",
            "NameHasOwner", g_variant_new("(s)", kSecrets), G_VARIANT_TYPE("(b)"),
            G_DBUS_CALL_FLAGS_NONE, 5000, cancellable, &error);
        if (reply == nullptr) {
            drop_connection();
            return cannot_watch(error);
        }
        gboolean owned = FALSE;
        g_variant_get(reply, "(b)", &owned);
        g_variant_unref(reply);
        warned = false;
        spdlog::info("watching the Secret Service for locks and edits ({})",
                     owned != FALSE ? "org.freedesktop.secrets is on the session bus"
                                    : "nothing provides org.freedesktop.secrets yet");
        report_watched(true);
        return true;
    }

    bool cannot_watch(GError* error) {
        const std::string message =
            error != nullptr && error->message != nullptr ? error->message : "unknown error";
        if (error != nullptr) g_error_free(error);
        if (!stopping) {
            if (!warned) {
                spdlog::warn(
                    "cannot watch the Secret Service ({}): credentials are not cached until it can "
                    "be "
                    "watched; retrying every {} s",
                    message, kRetrySeconds);
            } else {
                spdlog::debug("still cannot watch the Secret Service: {}", message);
            }
            warned = true;
        }
        report_watched(false);
        return false;
    }

    void drop_connection() {
        if (connection == nullptr) return;
        if (secrets_subscription != 0)
            g_dbus_connection_signal_unsubscribe(connection, secrets_subscription);
        if (owner_subscription != 0)
            g_dbus_connection_signal_unsubscribe(connection, owner_subscription);
        if (closed_handler != 0) g_signal_handler_disconnect(connection, closed_handler);
        secrets_subscription = owner_subscription = 0;
        closed_handler = 0;
        if (g_dbus_connection_is_closed(connection) == FALSE) {
            g_dbus_connection_close(connection, nullptr, nullptr, nullptr);
        }
        g_object_unref(connection);
        connection = nullptr;
    }

    void schedule_retry() {
        GSource* timer = g_timeout_source_new_seconds(kRetrySeconds);
        g_source_set_callback(
            timer,
            [](gpointer self) -> gboolean {
                auto* state = static_cast<State*>(self);
                return state->stopping || state->connect() ? G_SOURCE_REMOVE : G_SOURCE_CONTINUE;
            },
            this, nullptr);
        g_source_attach(timer, context);
        g_source_unref(timer);
    }

    void report_watched(bool watched) {
        if (!first_reported) {
            first_reported = true;
            first.set_value(watched);
        }
        asio::post(io, [self = shared_from_this(), watched] {
            if (!self->stopping) self->events->keyring_watched(watched);
        });
    }

    // Coalesced: one invalidation pending at a time is enough, as long as it
    // runs after the signal that asked for it.
    void changed(const std::string& why) {
        spdlog::debug("keyring: {}: dropping cached credentials", why);
        if (pending.exchange(true)) return;
        asio::post(io, [self = shared_from_this()] {
            self->pending = false;
            if (!self->stopping) self->events->keyring_changed();
        });
    }

    static void on_closed(GDBusConnection*, gboolean, GError* error, gpointer self) {
        auto* state = static_cast<State*>(self);
        spdlog::warn(
            "lost the session bus connection that watches the Secret Service ({}): credentials are "
            "not "
            "cached until it is back",
            error != nullptr && error->message != nullptr ? error->message : "closed");
        state->warned = true;
        state->drop_connection();
        state->report_watched(false);
        if (!state->stopping) state->schedule_retry();
    }

    static void on_secrets_signal(GDBusConnection*, const gchar*, const gchar* path,
                                  const gchar* interface, const gchar* member, GVariant* parameters,
                                  gpointer self) {
        const std::string_view iface = interface != nullptr ? interface : "";
        const std::string_view name = member != nullptr ? member : "";
        if (iface == "org.freedesktop.DBus.Properties" && name == "PropertiesChanged" &&
            !touches_locked(parameters)) {
            return;
        }
        if (iface == "org.freedesktop.Secret.Prompt") return;  // our own unlock prompts' answers
        static_cast<State*>(self)->changed(std::string(iface) + "." + std::string(name) + " on " +
                                           (path != nullptr ? path : "?"));
    }

    static void on_owner_changed(GDBusConnection*, const gchar*, const gchar*, const gchar*,
                                 const gchar*, GVariant* parameters, gpointer self) {
        auto* state = static_cast<State*>(self);
        const gchar* old_owner = "";
        const gchar* new_owner = "";
        if (g_variant_is_of_type(parameters, G_VARIANT_TYPE("(sss)"))) {
            g_variant_get(parameters, "(&s&s&s)", nullptr, &old_owner, &new_owner);
        }
        const bool gone = *new_owner == '\0';
        const bool appeared = *old_owner == '\0';
        spdlog::info("{}: dropping cached credentials",
                     gone       ? "the Secret Service left the session bus"
                     : appeared ? "a Secret Service appeared on the session bus"
                                : "the Secret Service was replaced on the session bus");
        state->service_replaced();
        state->changed("owner of org.freedesktop.secrets changed");
    }

    asio::any_io_executor io;
    credentials::KeyringEvents* events;
    std::function<void()> service_replaced;
    std::atomic<bool> pending{false};
    std::atomic<bool> stopping{false};
    GMainContext* context = g_main_context_new();
    GMainLoop* loop = g_main_loop_new(context, FALSE);
    GCancellable* cancellable = g_cancellable_new();
    GDBusConnection* connection = nullptr;
    guint secrets_subscription = 0;
    guint owner_subscription = 0;
    gulong closed_handler = 0;
    bool warned = false;
    bool first_reported = false;
    std::promise<bool> first;
    std::thread thread;
};

SecretServiceWatch::SecretServiceWatch(asio::any_io_executor io, credentials::KeyringEvents& events,
                                       std::function<void()> service_replaced,
                                       std::chrono::milliseconds settle)
    : state_(std::make_shared<State>(std::move(io), events, std::move(service_replaced))) {
    std::future<bool> first = state_->first.get_future();
    state_->thread = std::thread([state = state_.get()] { state->run(); });
    // Until the watch stands, nothing is cached; the thread's own report
    // (posted to the event loop) follows.
    const bool watched = first.wait_for(settle) == std::future_status::ready && first.get();
    events.keyring_watched(watched);
}

SecretServiceWatch::~SecretServiceWatch() {
    state_->stop();
}

}  // namespace hostkeeper::daemon::libsecret
