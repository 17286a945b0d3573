#include "libsecret_keyring.hpp"

#include <libsecret/secret.h>

#include <condition_variable>
#include <mutex>
#include <thread>
#include <vector>

#include "hostkeeper/proto/error.hpp"

namespace hostkeeper::daemon {
using proto::Error;
using proto::ErrorCode;
using proto::Secret;

namespace {

const SecretSchema* schema() {
    static const SecretSchema value = [] {
        SecretSchema s{};
        s.name = "io.hostkeeper.Credentials";
        s.flags = SECRET_SCHEMA_NONE;
        s.attributes[0].name = "host";
        s.attributes[0].type = SECRET_SCHEMA_ATTRIBUTE_STRING;
        return s;
    }();
    return &value;
}

template <typename T, void (*Free)(T*)>
struct Deleter {
    void operator()(T* p) const {
        if (p != nullptr) Free(p);
    }
};
void unref_value(SecretValue* p) { secret_value_unref(p); }
using ErrorPtr = std::unique_ptr<GError, Deleter<GError, g_error_free>>;
using HashTablePtr = std::unique_ptr<GHashTable, Deleter<GHashTable, g_hash_table_unref>>;
using ValuePtr = std::unique_ptr<SecretValue, Deleter<SecretValue, unref_value>>;
template <typename T>
struct GObjectPtr {
    struct Unref {
        void operator()(T* p) const {
            if (p != nullptr) g_object_unref(p);
        }
    };
    using type = std::unique_ptr<T, Unref>;
};
using ServicePtr = GObjectPtr<SecretService>::type;
using CollectionPtr = GObjectPtr<SecretCollection>::type;
using ItemPtr = GObjectPtr<SecretItem>::type;
using CancellablePtr = GObjectPtr<GCancellable>::type;

// Owns a GList of SecretItem references.
class ItemList {
public:
    explicit ItemList(GList* list) : list_(list) {}
    ItemList(const ItemList&) = delete;
    ItemList& operator=(const ItemList&) = delete;
    ~ItemList() { g_list_free_full(list_, g_object_unref); }
    GList* get() const { return list_; }
    std::vector<SecretItem*> items() const {
        std::vector<SecretItem*> out;
        for (GList* l = list_; l != nullptr; l = l->next) out.push_back(static_cast<SecretItem*>(l->data));
        return out;
    }

private:
    GList* list_;
};

HashTablePtr attributes_for(const std::string& host) {
    HashTablePtr attributes(g_hash_table_new(g_str_hash, g_str_equal));
    // The table does not own its strings; `host` outlives it.
    g_hash_table_insert(attributes.get(), const_cast<char*>("host"), const_cast<char*>(host.c_str()));
    return attributes;
}

[[noreturn]] void fail(GError* raw, const std::string& context) {
    const ErrorPtr error(raw);
    // A dropped service connection must not be reused for the next call.
    secret_service_disconnect();
    const std::string message = raw != nullptr && raw->message != nullptr ? raw->message : "unknown error";
    if (raw != nullptr && raw->domain == G_DBUS_ERROR &&
        (raw->code == G_DBUS_ERROR_SERVICE_UNKNOWN || raw->code == G_DBUS_ERROR_NAME_HAS_NO_OWNER)) {
        throw Error(ErrorCode::keyring_unavailable,
                    "no Secret Service on the session bus (nothing provides org.freedesktop.secrets): "
                    "start gnome-keyring-daemon, or another Secret Service such as KeePassXC");
    }
    if (raw != nullptr && raw->domain == G_IO_ERROR && raw->code == G_IO_ERROR_CANCELLED) {
        throw Error(ErrorCode::keyring_locked, context + ": the keyring is locked and was not unlocked in time");
    }
    if (raw != nullptr && raw->domain == SECRET_ERROR && raw->code == SECRET_ERROR_IS_LOCKED) {
        throw Error(ErrorCode::keyring_locked,
                    context + ": the keyring is locked; unlock it (for example in Seahorse, or by logging "
                              "in to your desktop session) and try again");
    }
    if (raw != nullptr && (raw->domain == G_IO_ERROR || raw->domain == G_DBUS_ERROR) &&
        (message.find("bus") != std::string::npos || message.find("D-Bus") != std::string::npos ||
         message.find("DBUS") != std::string::npos)) {
        throw Error(ErrorCode::keyring_unavailable,
                    "cannot reach the D-Bus session bus (" + message +
                        "); hostkeeperd needs DBUS_SESSION_BUS_ADDRESS to point at your session bus");
    }
    throw Error(ErrorCode::keyring_error, context + ": Secret Service error: " + message);
}

// libsecret's D-Bus proxies deliver signals (an item created, the
// collection's Items property changed, ...) to the main context of the
// thread that made them: this worker's default context, which nothing else
// iterates. Unless dispatched they pile up, and some grow with the number of
// items (measured: about 30 kB per store with 200 items). Drain after every call.
class DrainMainContext {
public:
    DrainMainContext() = default;
    DrainMainContext(const DrainMainContext&) = delete;
    DrainMainContext& operator=(const DrainMainContext&) = delete;
    ~DrainMainContext() {
        while (g_main_context_iteration(nullptr, FALSE) != FALSE) {
        }
    }
};

ServicePtr connect() {
    GError* error = nullptr;
    ServicePtr service(secret_service_get_sync(SECRET_SERVICE_NONE, nullptr, &error));
    if (!service) fail(error, "connecting to the Secret Service");
    return service;
}

// Cancels `cancellable` if the guarded scope takes longer than `timeout`:
// libsecret's prompts otherwise wait for a person indefinitely.
class CancelAfter {
public:
    CancelAfter(GCancellable* cancellable, std::chrono::milliseconds timeout)
        : thread_([this, cancellable, timeout] {
              std::unique_lock lock(mutex_);
              if (!done_cv_.wait_for(lock, timeout, [this] { return done_; })) g_cancellable_cancel(cancellable);
          }) {}
    CancelAfter(const CancelAfter&) = delete;
    CancelAfter& operator=(const CancelAfter&) = delete;
    ~CancelAfter() {
        {
            const std::lock_guard lock(mutex_);
            done_ = true;
        }
        done_cv_.notify_one();
        thread_.join();
    }

private:
    std::mutex mutex_;
    std::condition_variable done_cv_;
    bool done_ = false;
    std::thread thread_;
};

// Asks the Secret Service to unlock `objects` (items or collections), which
// may show a prompt; bounded by `timeout`.
void unlock(SecretService* service, GList* objects, std::chrono::milliseconds timeout, const std::string& context) {
    const CancellablePtr cancellable(g_cancellable_new());
    GList* unlocked = nullptr;
    GError* error = nullptr;
    gint count = 0;
    {
        const CancelAfter watchdog(cancellable.get(), timeout);
        count = secret_service_unlock_sync(service, objects, cancellable.get(), &unlocked, &error);
    }
    g_list_free_full(unlocked, g_object_unref);
    if (error != nullptr) fail(error, context);
    if (count == 0) {
        throw Error(ErrorCode::keyring_locked,
                    context + ": the keyring is locked and was not unlocked (the unlock prompt was dismissed, "
                              "could not be shown, or took longer than " +
                        std::to_string(timeout.count() / 1000) +
                        " s); unlock it, for example in Seahorse or by logging in to your desktop session, "
                        "and try again");
    }
}

ItemList search(SecretService* service, const std::string& host) {
    const HashTablePtr attributes = attributes_for(host);
    GError* error = nullptr;
    // No UNLOCK and no LOAD_SECRETS flag: attributes are searchable while
    // locked, so a locked item is found (and never mistaken for "none").
    GList* found = secret_service_search_sync(service, schema(), attributes.get(), SECRET_SEARCH_ALL, nullptr, &error);
    if (error != nullptr) fail(error, "searching the keyring for " + host);
    return ItemList(found);
}

void unlock_locked(SecretService* service, const ItemList& items, std::chrono::milliseconds timeout,
                   const std::string& context) {
    GList* locked = nullptr;
    for (SecretItem* item : items.items()) {
        if (secret_item_get_locked(item) != FALSE) locked = g_list_append(locked, item);
    }
    if (locked == nullptr) return;
    try {
        unlock(service, locked, timeout, context);
    } catch (...) {
        g_list_free(locked);
        throw;
    }
    g_list_free(locked);
}

}  // namespace

LibsecretKeyring::LibsecretKeyring(std::chrono::milliseconds unlock_timeout) : unlock_timeout_(unlock_timeout) {}

LibsecretKeyring::~LibsecretKeyring() { secret_service_disconnect(); }

std::optional<Secret> LibsecretKeyring::lookup(const std::string& host) {
    const DrainMainContext drain;
    const std::string context = "reading the credentials for " + host;
    const ServicePtr service = connect();
    const ItemList items = search(service.get(), host);
    if (items.get() == nullptr) return std::nullopt;
    unlock_locked(service.get(), items, unlock_timeout_, context);

    SecretItem* item = items.items().front();
    GError* error = nullptr;
    if (secret_item_load_secret_sync(item, nullptr, &error) == FALSE) fail(error, context);
    const ValuePtr value(secret_item_get_secret(item));
    if (!value) throw Error(ErrorCode::keyring_locked, context + ": the Secret Service returned no secret (locked?)");
    gsize length = 0;
    const gchar* data = secret_value_get(value.get(), &length);
    return Secret(std::string_view(data, length));
}

void LibsecretKeyring::store(const std::string& host, const Secret& credentials) {
    const DrainMainContext drain;
    const std::string context = "storing the credentials for " + host;
    const ServicePtr service = connect();
    GError* error = nullptr;
    const CollectionPtr collection(secret_collection_for_alias_sync(service.get(), SECRET_COLLECTION_DEFAULT,
                                                                     SECRET_COLLECTION_NONE, nullptr, &error));
    if (error != nullptr) fail(error, context);
    if (!collection) {
        throw Error(ErrorCode::no_default_collection,
                    "the Secret Service has no default collection to store " + host +
                        " in: create a keyring and make it the default (for example in Seahorse)");
    }
    if (secret_collection_get_locked(collection.get()) != FALSE) {
        GList* objects = g_list_append(nullptr, collection.get());
        try {
            unlock(service.get(), objects, unlock_timeout_, context);
        } catch (...) {
            g_list_free(objects);
            throw;
        }
        g_list_free(objects);
    }
    const HashTablePtr attributes = attributes_for(host);
    const std::string label = "hostkeeper: " + host;
    const std::string_view text = credentials.view();
    const ValuePtr value(secret_value_new(text.data(), static_cast<gssize>(text.size()), "text/plain"));
    const ItemPtr item(secret_item_create_sync(collection.get(), schema(), attributes.get(), label.c_str(),
                                               value.get(), SECRET_ITEM_CREATE_REPLACE, nullptr, &error));
    if (!item) fail(error, context);
}

bool LibsecretKeyring::remove(const std::string& host) {
    const DrainMainContext drain;
    const std::string context = "removing the credentials for " + host;
    const ServicePtr service = connect();
    const ItemList items = search(service.get(), host);
    if (items.get() == nullptr) return false;
    unlock_locked(service.get(), items, unlock_timeout_, context);
    for (SecretItem* item : items.items()) {
        GError* error = nullptr;
        if (secret_item_delete_sync(item, nullptr, &error) == FALSE) fail(error, context);
    }
    return true;
}

}  // namespace hostkeeper::daemon
