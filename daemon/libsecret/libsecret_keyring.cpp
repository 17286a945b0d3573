#include "daemon/libsecret/libsecret_keyring.hpp"

// The D-Bus path functions (secret-paths.h: search and read by object path,
// without an item proxy each) are behind this acknowledgement.
#define SECRET_API_SUBJECT_TO_CHANGE 1
#include <libsecret/secret.h>

#include <algorithm>
#include <condition_variable>
#include <cstdint>
#include <initializer_list>
#include <mutex>
#include <thread>
#include <utility>
#include <vector>

#include "proto/error.hpp"
#include "proto/session_bus.hpp"

namespace hostkeeper::daemon::libsecret {
using proto::Error;
using proto::ErrorCode;
using proto::Secret;

namespace {

// hostkeeper's Terraform credentials: one item per normalized host.
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

// Docker credentials: one item per server URL, its username an attribute
// (so that listing reads no secret), the secret itself as the item's secret.
const SecretSchema* docker_schema() {
    static const SecretSchema value = [] {
        SecretSchema s{};
        s.name = "io.hostkeeper.DockerCredentials";
        s.flags = SECRET_SCHEMA_NONE;
        s.attributes[0].name = "server";
        s.attributes[0].type = SECRET_SCHEMA_ATTRIBUTE_STRING;
        s.attributes[1].name = "username";
        s.attributes[1].type = SECRET_SCHEMA_ATTRIBUTE_STRING;
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
void unref_value(SecretValue* p) {
    secret_value_unref(p);
}
using ErrorPtr = std::unique_ptr<GError, Deleter<GError, g_error_free>>;
using HashTablePtr = std::unique_ptr<GHashTable, Deleter<GHashTable, g_hash_table_unref>>;
using ValuePtr = std::unique_ptr<SecretValue, Deleter<SecretValue, unref_value>>;
using StrvPtr = std::unique_ptr<gchar*, Deleter<gchar*, g_strfreev>>;
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
    ItemList(ItemList&& other) noexcept : list_(std::exchange(other.list_, nullptr)) {}
    ItemList& operator=(ItemList&& other) noexcept {
        if (this != &other) {
            g_list_free_full(list_, g_object_unref);
            list_ = std::exchange(other.list_, nullptr);
        }
        return *this;
    }
    ~ItemList() { g_list_free_full(list_, g_object_unref); }
    GList* get() const { return list_; }
    void append(SecretItem* item) { list_ = g_list_append(list_, item); }
    std::vector<SecretItem*> items() const {
        std::vector<SecretItem*> out;
        for (GList* l = list_; l != nullptr; l = l->next)
            out.push_back(static_cast<SecretItem*>(l->data));
        return out;
    }

  private:
    GList* list_;
};

// An attribute table that borrows its strings: they must outlive it.
HashTablePtr attributes_of(
    std::initializer_list<std::pair<const char*, const std::string*>> pairs) {
    HashTablePtr attributes(g_hash_table_new(g_str_hash, g_str_equal));
    for (const auto& [name, value] : pairs) {
        g_hash_table_insert(attributes.get(), const_cast<char*>(name),
                            const_cast<char*>(value->c_str()));
    }
    return attributes;
}

HashTablePtr attributes_for(const std::string& host) {
    return attributes_of({{"host", &host}});
}

// An item's string attribute, or "".
std::string attribute(SecretItem* item, const char* name) {
    const HashTablePtr attributes(secret_item_get_attributes(item));
    if (!attributes) return {};
    const auto* value = static_cast<const char*>(g_hash_table_lookup(attributes.get(), name));
    return value != nullptr ? value : "";
}

std::string label_of(SecretItem* item) {
    gchar* raw = secret_item_get_label(item);
    std::string label = raw != nullptr ? raw : "";
    g_free(raw);
    return label;
}

std::optional<credentials::WallTime> modified_of(SecretItem* item) {
    const guint64 seconds = secret_item_get_modified(item);
    if (seconds == 0) return std::nullopt;
    return credentials::WallTime(std::chrono::seconds(static_cast<std::int64_t>(seconds)));
}

// A failure of the connection rather than of the call: the service was
// restarted (its old unique name, objects and session are gone) or went away.
// Worth one more try on a new connection.
class StaleConnection : public Error {
  public:
    using Error::Error;
};

bool connection_went_stale(const GError* e) {
    if (e->domain == G_DBUS_ERROR) {
        return e->code == G_DBUS_ERROR_SERVICE_UNKNOWN ||
               e->code == G_DBUS_ERROR_NAME_HAS_NO_OWNER || e->code == G_DBUS_ERROR_NO_REPLY ||
               e->code == G_DBUS_ERROR_DISCONNECTED || e->code == G_DBUS_ERROR_UNKNOWN_OBJECT ||
               e->code == G_DBUS_ERROR_UNKNOWN_METHOD;
    }
    if (e->domain == G_IO_ERROR) return e->code == G_IO_ERROR_CLOSED;
    if (e->domain == SECRET_ERROR) return e->code == SECRET_ERROR_NO_SUCH_OBJECT;
    return false;
}

// What a cancelled call means: an unlock prompt nobody answered in time, or
// a Secret Service that did not answer a plain call in time.
struct Bound {
    std::chrono::milliseconds timeout;
    bool prompt = false;
};

std::string seconds_text(std::chrono::milliseconds timeout) {
    const auto ms = timeout.count();
    return ms % 1000 == 0 ? std::to_string(ms / 1000) + " s" : std::to_string(ms) + " ms";
}

[[noreturn]] void fail(GError* raw, const std::string& context, Bound bound) {
    const ErrorPtr error(raw);
    // A dropped service connection must not be reused for the next call.
    secret_service_disconnect();
    const std::string message =
        raw != nullptr && raw->message != nullptr ? raw->message : "unknown error";
    if (raw != nullptr && raw->domain == G_IO_ERROR && raw->code == G_IO_ERROR_CANCELLED) {
        if (bound.prompt) {
            throw Error(ErrorCode::keyring_locked,
                        context + ": the keyring is locked and was not unlocked in time");
        }
        throw Error(
            ErrorCode::keyring_unavailable,
            context + ": the Secret Service did not answer within " + seconds_text(bound.timeout) +
                " (is gnome-keyring-daemon, or the Secret Service you use, stopped or hung?)");
    }
    const bool stale = raw != nullptr && connection_went_stale(raw);
    if (raw != nullptr && raw->domain == G_DBUS_ERROR &&
        (raw->code == G_DBUS_ERROR_SERVICE_UNKNOWN ||
         raw->code == G_DBUS_ERROR_NAME_HAS_NO_OWNER)) {
        throw StaleConnection(
            ErrorCode::keyring_unavailable,
            "no Secret Service on the session bus (nothing provides org.freedesktop.secrets): "
            "start gnome-keyring-daemon, or another Secret Service such as KeePassXC");
    }
    if (raw != nullptr && raw->domain == SECRET_ERROR && raw->code == SECRET_ERROR_IS_LOCKED) {
        throw Error(
            ErrorCode::keyring_locked,
            context +
                ": the keyring is locked; unlock it (for example in Seahorse, or by logging "
                "in to your desktop session) and try again");
    }
    if (raw != nullptr && (raw->domain == G_IO_ERROR || raw->domain == G_DBUS_ERROR) &&
        (message.find("bus") != std::string::npos || message.find("D-Bus") != std::string::npos ||
         message.find("DBUS") != std::string::npos)) {
        const std::string text =
            "cannot reach the D-Bus session bus (" + message +
            "); hostkeeperd needs DBUS_SESSION_BUS_ADDRESS to point at your session bus";
        if (stale) throw StaleConnection(ErrorCode::keyring_unavailable, text);
        throw Error(ErrorCode::keyring_unavailable, text);
    }
    const std::string text = context + ": Secret Service error: " + message;
    if (stale) throw StaleConnection(ErrorCode::keyring_error, text);
    throw Error(ErrorCode::keyring_error, text);
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

}  // namespace

// Cancels the armed call when its time is up: D-Bus calls to a stopped
// service, and prompts nobody answers, otherwise wait indefinitely (or for
// GDBus's 25 s). One thread for the adapter's one worker thread's calls.
class CallWatchdog {
  public:
    CallWatchdog() : thread_([this] { watch(); }) {}
    CallWatchdog(const CallWatchdog&) = delete;
    CallWatchdog& operator=(const CallWatchdog&) = delete;
    ~CallWatchdog() {
        {
            const std::lock_guard lock(mutex_);
            quit_ = true;
        }
        cv_.notify_one();
        thread_.join();
    }

    void arm(GCancellable* cancellable, std::chrono::milliseconds timeout) {
        {
            const std::lock_guard lock(mutex_);
            armed_ = cancellable;
            deadline_ = std::chrono::steady_clock::now() + timeout;
        }
        cv_.notify_one();
    }
    void disarm() {
        const std::lock_guard lock(mutex_);
        armed_ = nullptr;
    }

  private:
    void watch() {
        std::unique_lock lock(mutex_);
        while (!quit_) {
            if (armed_ == nullptr) {
                cv_.wait(lock);
            } else if (std::chrono::steady_clock::now() >= deadline_) {
                // Still armed: the call's owner disarms (under the lock) before it unrefs.
                g_cancellable_cancel(armed_);
                armed_ = nullptr;
            } else {
                cv_.wait_until(lock, deadline_);
            }
        }
    }

    std::mutex mutex_;
    std::condition_variable cv_;
    GCancellable* armed_ = nullptr;
    std::chrono::steady_clock::time_point deadline_;
    bool quit_ = false;
    std::thread thread_;
};

namespace {

// One bounded D-Bus call: a cancellable the watchdog cancels after `bound`.
class Call {
  public:
    Call(CallWatchdog& watchdog, Bound bound)
        : watchdog_(watchdog), bound_(bound), cancellable_(g_cancellable_new()) {
        watchdog_.arm(cancellable_.get(), bound.timeout);
    }
    Call(const Call&) = delete;
    Call& operator=(const Call&) = delete;
    ~Call() { watchdog_.disarm(); }
    GCancellable* cancellable() const { return cancellable_.get(); }
    [[noreturn]] void fail(GError* error, const std::string& context) const {
        watchdog_.disarm();
        ::hostkeeper::daemon::libsecret::fail(error, context, bound_);
    }

  private:
    CallWatchdog& watchdog_;
    Bound bound_;
    CancellablePtr cancellable_;
};

// What every operation needs: where to bound its calls.
struct Calls {
    CallWatchdog& watchdog;
    std::chrono::milliseconds call_timeout;
    std::chrono::milliseconds unlock_timeout;
    Bound plain() const { return Bound{call_timeout, false}; }
    Bound prompt() const { return Bound{unlock_timeout, true}; }
};

ServicePtr connect(const Calls& calls) {
    const Call call(calls.watchdog, calls.plain());
    GError* error = nullptr;
    ServicePtr service(secret_service_get_sync(SECRET_SERVICE_NONE, call.cancellable(), &error));
    if (!service) call.fail(error, "connecting to the Secret Service");
    return service;
}

[[noreturn]] void throw_not_unlocked(const Calls& calls, const std::string& context) {
    throw Error(
        ErrorCode::keyring_locked,
        context +
            ": the keyring is locked and was not unlocked (the unlock prompt was dismissed, "
            "could not be shown, or took longer than " +
            std::to_string(calls.unlock_timeout.count() / 1000) +
            " s); unlock it, for example in Seahorse or by logging in to your desktop session, "
            "and try again");
}

// Asks the Secret Service to unlock `objects` (items or collections), which
// may show a prompt; bounded by the unlock timeout.
void unlock(const Calls& calls, SecretService* service, GList* objects,
            const std::string& context) {
    GList* unlocked = nullptr;
    GError* error = nullptr;
    gint count = 0;
    {
        const Call call(calls.watchdog, calls.prompt());
        count = secret_service_unlock_sync(service, objects, call.cancellable(), &unlocked, &error);
        g_list_free_full(unlocked, g_object_unref);
        if (error != nullptr) call.fail(error, context);
    }
    if (count == 0) throw_not_unlocked(calls, context);
}

// The items of `schema` that match `attributes` (all of the schema's with
// an empty table), in any collection, locked or not.
ItemList search_items(const Calls& calls, SecretService* service, const SecretSchema* item_schema,
                      GHashTable* attributes, const std::string& context) {
    const Call call(calls.watchdog, calls.plain());
    GError* error = nullptr;
    // No UNLOCK and no LOAD_SECRETS flag: attributes are searchable while
    // locked, so a locked item is found (and never mistaken for "none").
    GList* found = secret_service_search_sync(service, item_schema, attributes, SECRET_SEARCH_ALL,
                                              call.cancellable(), &error);
    if (error != nullptr) {
        g_list_free_full(found, g_object_unref);
        call.fail(error, context);
    }
    return ItemList(found);
}

// Every item of `item_schema`.
ItemList all_items(const Calls& calls, SecretService* service, const SecretSchema* item_schema,
                   const std::string& context) {
    const HashTablePtr none(g_hash_table_new(g_str_hash, g_str_equal));
    return search_items(calls, service, item_schema, none.get(), context);
}

ItemList search(const Calls& calls, SecretService* service, const std::string& host) {
    const HashTablePtr attributes = attributes_for(host);
    return search_items(calls, service, schema(), attributes.get(),
                        "searching the keyring for " + host);
}

// gnome-keyring shows the items of a keyring it loaded from disk, while that
// keyring is locked, with hashed attribute values ("gkr:compat:hashed:NAME",
// the MD5 of the value) and a placeholder xdg:schema: a search that names
// the schema does not find them, and only the hash tells whose they are.
constexpr const char* kHashedSchema = "gkr:compat:hashed:xdg:schema";

enum class Whose { ours, theirs, unknown };

// Whose a found item is: ours when its xdg:schema is `schema_name` and it
// has `key` in clear; another application's when its readable xdg:schema
// (or gnome-keyring's hash of it) says so; unknown for a locked item that
// shows no schema.
Whose whose(SecretItem* item, const char* schema_name, const char* key) {
    const HashTablePtr attributes(secret_item_get_attributes(item));
    const auto get = [&](const char* name) -> const char* {
        if (!attributes) return nullptr;
        return static_cast<const char*>(g_hash_table_lookup(attributes.get(), name));
    };
    const char* item_schema = get("xdg:schema");
    const char* value = get(key);
    if (item_schema != nullptr && value != nullptr && std::string_view(item_schema) == schema_name)
        return Whose::ours;
    if (secret_item_get_locked(item) == FALSE) return Whose::theirs;
    if (const char* hashed = get(kHashedSchema); hashed != nullptr) {
        gchar* ours = g_compute_checksum_for_string(G_CHECKSUM_MD5, schema_name, -1);
        const bool same = std::string_view(hashed) == ours;
        g_free(ours);
        return same ? Whose::unknown : Whose::theirs;
    }
    return item_schema != nullptr ? Whose::theirs : Whose::unknown;
}

// The locked items that match `attributes` (every locked item with an empty
// table) whatever their schema, as proxies.
ItemList locked_matches(const Calls& calls, SecretService* service, GHashTable* attributes,
                        const std::string& context) {
    StrvPtr locked;
    {
        const Call call(calls.watchdog, calls.plain());
        GError* error = nullptr;
        gchar** unlocked_raw = nullptr;
        gchar** locked_raw = nullptr;
        const gboolean ok = secret_service_search_for_dbus_paths_sync(
            service, nullptr, attributes, call.cancellable(), &unlocked_raw, &locked_raw, &error);
        g_strfreev(unlocked_raw);
        locked.reset(locked_raw);
        if (ok == FALSE) call.fail(error, context);
    }
    ItemList items(nullptr);
    for (gchar** path = locked.get(); path != nullptr && *path != nullptr; ++path) {
        const Call call(calls.watchdog, calls.plain());
        GError* error = nullptr;
        SecretItem* item = secret_item_new_for_dbus_path_sync(service, *path, SECRET_ITEM_NONE,
                                                              call.cancellable(), &error);
        if (item == nullptr) call.fail(error, context);
        items.append(item);
    }
    return items;
}

// Finds the locked items a search that names `item_schema` misses (see
// kHashedSchema) and that may be ours (locked items whose attributes are
// readable are found by that search, and listed without unlocking), and unlocks them (which may
// prompt; keyring_locked when they stay locked): a locked item is never taken for "none". True when
// it unlocked something: search again.
bool unlock_hidden(const Calls& calls, SecretService* service, const SecretSchema* item_schema,
                   GHashTable* attributes, const char* key, const std::string& context) {
    const ItemList locked = locked_matches(calls, service, attributes, context);
    GList* candidates = nullptr;
    for (SecretItem* item : locked.items()) {
        if (whose(item, item_schema->name, key) == Whose::unknown)
            candidates = g_list_append(candidates, item);
    }
    if (candidates == nullptr) return false;
    try {
        unlock(calls, service, candidates, context);
    } catch (...) {
        g_list_free(candidates);
        throw;
    }
    g_list_free(candidates);
    return true;
}

void unlock_locked(const Calls& calls, SecretService* service, const ItemList& items,
                   const std::string& context) {
    GList* locked = nullptr;
    for (SecretItem* item : items.items()) {
        if (secret_item_get_locked(item) != FALSE) locked = g_list_append(locked, item);
    }
    if (locked == nullptr) return;
    try {
        unlock(calls, service, locked, context);
    } catch (...) {
        g_list_free(locked);
        throw;
    }
    g_list_free(locked);
}

// unlock() of one object (an item or a collection).
void unlock_one(const Calls& calls, SecretService* service, gpointer object,
                const std::string& context) {
    GList* objects = g_list_append(nullptr, object);
    try {
        unlock(calls, service, objects, context);
    } catch (...) {
        g_list_free(objects);
        throw;
    }
    g_list_free(objects);
}

// Unlocks one item by its object path (may prompt; bounded by the unlock
// timeout). Through an item proxy and secret_service_unlock_sync: libsecret
// 0.20.5's secret_service_unlock_dbus_paths_sync leaks its prompt object
// (LeakSanitizer). Only the locked path pays for the proxy.
void unlock_paths(const Calls& calls, SecretService* service, const std::string& path,
                  const std::string& context) {
    ItemPtr item;
    {
        const Call call(calls.watchdog, calls.plain());
        GError* error = nullptr;
        item.reset(secret_item_new_for_dbus_path_sync(service, path.c_str(), SECRET_ITEM_NONE,
                                                      call.cancellable(), &error));
        if (!item) call.fail(error, context);
    }
    unlock_one(calls, service, item.get(), context);
}

// The default collection, or none; never unlocks.
CollectionPtr default_collection(const Calls& calls, SecretService* service,
                                 const std::string& context) {
    const Call call(calls.watchdog, calls.plain());
    GError* error = nullptr;
    CollectionPtr collection(secret_collection_for_alias_sync(
        service, SECRET_COLLECTION_DEFAULT, SECRET_COLLECTION_NONE, call.cancellable(), &error));
    if (error != nullptr) call.fail(error, context);
    return collection;
}

// The default collection, unlocked (which may prompt).
CollectionPtr unlocked_default_collection(const Calls& calls, SecretService* service,
                                          const std::string& context, const std::string& purpose) {
    CollectionPtr collection = default_collection(calls, service, context);
    if (!collection) {
        throw Error(ErrorCode::no_default_collection,
                    "the Secret Service has no default collection " + purpose +
                        ": create a keyring and make it the default (for example in Seahorse)");
    }
    if (secret_collection_get_locked(collection.get()) != FALSE)
        unlock_one(calls, service, collection.get(), context);
    return collection;
}

}  // namespace

LibsecretKeyring::LibsecretKeyring(std::chrono::milliseconds unlock_timeout)
    : unlock_timeout_(unlock_timeout),
      call_timeout_(std::min<std::chrono::milliseconds>(unlock_timeout, std::chrono::seconds(10))),
      watchdog_(std::make_unique<CallWatchdog>()) {}

LibsecretKeyring::~LibsecretKeyring() {
    secret_service_disconnect();
}

void LibsecretKeyring::service_replaced() {
    replaced_ = true;
}

// Runs one operation; on a stale connection (the service restarted under
// us: libsecret's cached proxy still speaks to the old process's unique
// name, objects and session), once more on a new one.
template <typename F>
auto LibsecretKeyring::attempt(F f) {
    const DrainMainContext drain;
    // Signals queued for the cached proxies (NameOwnerChanged, ...) first.
    while (g_main_context_iteration(nullptr, FALSE) != FALSE) {
    }
    if (replaced_.exchange(false)) secret_service_disconnect();
    try {
        return f();
    } catch (const StaleConnection&) {
        // fail() dropped the connection; the next connect() makes a new one.
    }
    return f();
}

std::optional<Secret> LibsecretKeyring::lookup(const std::string& host) {
    return attempt([&] { return lookup_once(host); });
}

void LibsecretKeyring::store(const std::string& host, const Secret& credentials) {
    attempt([&] { store_once(host, credentials); });
}

bool LibsecretKeyring::remove(const std::string& host) {
    return attempt([&] { return remove_once(host); });
}

LibsecretKeyring::Probe LibsecretKeyring::probe() {
    const std::string bus = proto::session_bus_address();
    if (bus.empty()) {
        return {false,
                "no D-Bus session bus (DBUS_SESSION_BUS_ADDRESS is unset and there is no "
                "$XDG_RUNTIME_DIR/bus)"};
    }
    try {
        return attempt([&] {
            const Calls calls{*watchdog_, call_timeout_, unlock_timeout_};
            const ServicePtr service = connect(calls);
            const CollectionPtr collection =
                default_collection(calls, service.get(), "asking for the default collection");
            if (!collection) {
                return Probe{false, "the Secret Service answers, but has no default collection"};
            }
            // No locked/unlocked here: this is said once, when the backend is
            // chosen, and a keyring is locked and unlocked after that.
            return Probe{true, "the Secret Service answers and has a default collection"};
        });
    } catch (const Error& e) {
        return {false, e.what()};
    }
}

void LibsecretKeyring::unlock() {
    attempt([&] {
        const Calls calls{*watchdog_, call_timeout_, unlock_timeout_};
        const ServicePtr service = connect(calls);
        (void)unlocked_default_collection(calls, service.get(), "unlocking the keyring",
                                          "to unlock");
    });
}

namespace {

struct FoundPath {
    std::string path;
    bool locked = false;
};

// The object path of the host's item (an unlocked one first), by a search
// that names the schema; nullopt when it finds none.
std::optional<FoundPath> find_path(const Calls& calls, SecretService* service,
                                   GHashTable* attributes, const std::string& host) {
    const Call call(calls.watchdog, calls.plain());
    GError* error = nullptr;
    gchar** unlocked_raw = nullptr;
    gchar** locked_raw = nullptr;
    const gboolean ok = secret_service_search_for_dbus_paths_sync(
        service, schema(), attributes, call.cancellable(), &unlocked_raw, &locked_raw, &error);
    const StrvPtr unlocked(unlocked_raw);
    const StrvPtr locked(locked_raw);
    if (ok == FALSE) call.fail(error, "searching the keyring for " + host);
    if (unlocked && unlocked.get()[0] != nullptr) return FoundPath{unlocked.get()[0], false};
    if (locked && locked.get()[0] != nullptr) return FoundPath{locked.get()[0], true};
    return std::nullopt;
}

}  // namespace

// The cold path: two D-Bus calls on the connection (and session) kept from
// before, as few as a one-shot secret_password_lookup_sync makes after it
// connects: SearchItems, then GetSecret of the item's path. No item proxy
// is made (each would cost a Properties.GetAll and signal subscriptions).
// SearchItems answers locked and unlocked items apart, so a locked item is
// unlocked (or reported locked), never taken for "none"; when it finds
// nothing, the locked items it cannot see are looked for (unlock_hidden).
std::optional<Secret> LibsecretKeyring::lookup_once(const std::string& host) {
    const Calls calls{*watchdog_, call_timeout_, unlock_timeout_};
    const std::string context = "reading the credentials for " + host;
    const ServicePtr service = connect(calls);
    const HashTablePtr attributes = attributes_for(host);
    std::optional<FoundPath> found = find_path(calls, service.get(), attributes.get(), host);
    if (!found && unlock_hidden(calls, service.get(), schema(), attributes.get(), "host", context))
        found = find_path(calls, service.get(), attributes.get(), host);
    if (!found) return std::nullopt;
    const std::string& path = found->path;
    if (found->locked) unlock_paths(calls, service.get(), path, context);
    ValuePtr value;
    {
        const Call call(calls.watchdog, calls.plain());
        GError* error = nullptr;
        if (secret_service_ensure_session_sync(service.get(), call.cancellable(), &error) == FALSE)
            call.fail(error, context);
        value.reset(secret_service_get_secret_for_dbus_path_sync(service.get(), path.c_str(),
                                                                 call.cancellable(), &error));
        if (error != nullptr) call.fail(error, context);
    }
    if (!value)
        throw Error(ErrorCode::keyring_locked,
                    context + ": the Secret Service returned no secret (locked?)");
    gsize length = 0;
    const gchar* data = secret_value_get(value.get(), &length);
    return Secret(std::string_view(data, length));
}

namespace {

// Creates (or replaces: same schema and attributes) an item in the default
// collection, which may have to be unlocked first.
void create_item(const Calls& calls, SecretService* service, const SecretSchema* item_schema,
                 GHashTable* attributes, const std::string& label, std::string_view text,
                 const std::string& context, const std::string& what) {
    const CollectionPtr collection =
        unlocked_default_collection(calls, service, context, "to store " + what + " in");
    const ValuePtr value(
        secret_value_new(text.data(), static_cast<gssize>(text.size()), "text/plain"));
    const Call call(calls.watchdog, calls.plain());
    GError* error = nullptr;
    const ItemPtr item(secret_item_create_sync(
        collection.get(), item_schema, attributes, label.c_str(), value.get(),
        SECRET_ITEM_CREATE_REPLACE, call.cancellable(), &error));
    if (!item) call.fail(error, context);
}

// Deletes `items` (unlocking the locked ones first, which may prompt).
void delete_items(const Calls& calls, SecretService* service, const ItemList& items,
                  const std::vector<SecretItem*>& which, const std::string& context) {
    unlock_locked(calls, service, items, context);
    for (SecretItem* item : which) {
        const Call call(calls.watchdog, calls.plain());
        GError* error = nullptr;
        if (secret_item_delete_sync(item, call.cancellable(), &error) == FALSE)
            call.fail(error, context);
    }
}

// One item's secret through its proxy, unlocking it first if need be.
Secret item_secret(const Calls& calls, SecretService* service, SecretItem* item,
                   const std::string& context) {
    if (secret_item_get_locked(item) != FALSE) unlock_one(calls, service, item, context);
    ValuePtr value;
    {
        const Call call(calls.watchdog, calls.plain());
        GError* error = nullptr;
        if (secret_item_load_secret_sync(item, call.cancellable(), &error) == FALSE)
            call.fail(error, context);
        value.reset(secret_item_get_secret(item));
    }
    if (!value)
        throw Error(ErrorCode::keyring_locked,
                    context + ": the Secret Service returned no secret (locked?)");
    gsize length = 0;
    const gchar* data = secret_value_get(value.get(), &length);
    return Secret(std::string_view(data, length));
}

}  // namespace

void LibsecretKeyring::store_once(const std::string& host, const Secret& credentials) {
    const Calls calls{*watchdog_, call_timeout_, unlock_timeout_};
    const ServicePtr service = connect(calls);
    const HashTablePtr attributes = attributes_for(host);
    create_item(calls, service.get(), schema(), attributes.get(), "hostkeeper: " + host,
                credentials.view(), "storing the credentials for " + host, host);
}

bool LibsecretKeyring::remove_once(const std::string& host) {
    const Calls calls{*watchdog_, call_timeout_, unlock_timeout_};
    const ServicePtr service = connect(calls);
    const std::string context = "removing the credentials for " + host;
    ItemList items = search(calls, service.get(), host);
    if (items.get() == nullptr) {
        const HashTablePtr attributes = attributes_for(host);
        if (!unlock_hidden(calls, service.get(), schema(), attributes.get(), "host", context))
            return false;
        items = search(calls, service.get(), host);
        if (items.get() == nullptr) return false;
    }
    delete_items(calls, service.get(), items, items.items(), context);
    return true;
}

// Every item of the schema, in any collection, locked or not: attributes,
// labels and times are readable while locked.
std::vector<credentials::ItemInfo> LibsecretKeyring::items_once() {
    const Calls calls{*watchdog_, call_timeout_, unlock_timeout_};
    const ServicePtr service = connect(calls);
    const std::string context = "listing hostkeeper's items in the keyring";
    const HashTablePtr none(g_hash_table_new(g_str_hash, g_str_equal));
    (void)unlock_hidden(calls, service.get(), schema(), none.get(), "host", context);
    const ItemList items = all_items(calls, service.get(), schema(), context);
    std::vector<credentials::ItemInfo> out;
    for (SecretItem* item : items.items()) {
        std::string host = attribute(item, "host");
        if (host.empty()) continue;
        out.push_back({std::move(host), label_of(item), modified_of(item)});
    }
    std::sort(out.begin(), out.end(), [](const auto& a, const auto& b) { return a.host < b.host; });
    out.erase(std::unique(out.begin(), out.end(),
                          [](const auto& a, const auto& b) { return a.host == b.host; }),
              out.end());
    return out;
}

std::vector<credentials::ItemInfo> LibsecretKeyring::items() {
    return attempt([&] { return items_once(); });
}

std::vector<std::string> LibsecretKeyring::hosts() {
    std::vector<std::string> out;
    for (credentials::ItemInfo& item : items()) out.push_back(std::move(item.host));
    return out;
}

std::optional<credentials::DockerCredentials> LibsecretKeyring::docker_lookup(
    const std::string& server) {
    return attempt([&]() -> std::optional<credentials::DockerCredentials> {
        const Calls calls{*watchdog_, call_timeout_, unlock_timeout_};
        const ServicePtr service = connect(calls);
        const HashTablePtr attributes = attributes_of({{"server", &server}});
        const std::string context = "searching the keyring for the Docker credentials of " + server;
        ItemList items =
            search_items(calls, service.get(), docker_schema(), attributes.get(), context);
        if (items.get() == nullptr && unlock_hidden(calls, service.get(), docker_schema(),
                                                    attributes.get(), "server", context)) {
            items = search_items(calls, service.get(), docker_schema(), attributes.get(), context);
        }
        if (items.get() == nullptr) return std::nullopt;
        SecretItem* item = items.items().front();
        Secret secret =
            item_secret(calls, service.get(), item, "reading the Docker credentials for " + server);
        return credentials::DockerCredentials{server, attribute(item, "username"),
                                              std::move(secret)};
    });
}

void LibsecretKeyring::docker_store(const credentials::DockerCredentials& credentials) {
    attempt([&] {
        const Calls calls{*watchdog_, call_timeout_, unlock_timeout_};
        const ServicePtr service = connect(calls);
        const std::string context = "storing the Docker credentials for " + credentials.server;
        const HashTablePtr attributes =
            attributes_of({{"server", &credentials.server}, {"username", &credentials.username}});
        create_item(calls, service.get(), docker_schema(), attributes.get(),
                    "hostkeeper docker: " + credentials.server, credentials.secret.view(), context,
                    credentials.server);
        // The server's items under another username: one server, one item.
        // Only after the new one is written, so a failure loses nothing.
        const HashTablePtr by_server = attributes_of({{"server", &credentials.server}});
        const ItemList items =
            search_items(calls, service.get(), docker_schema(), by_server.get(), context);
        std::vector<SecretItem*> others;
        for (SecretItem* item : items.items()) {
            if (attribute(item, "username") != credentials.username) others.push_back(item);
        }
        if (!others.empty()) delete_items(calls, service.get(), items, others, context);
    });
}

bool LibsecretKeyring::docker_remove(const std::string& server) {
    return attempt([&] {
        const Calls calls{*watchdog_, call_timeout_, unlock_timeout_};
        const ServicePtr service = connect(calls);
        const std::string context = "removing the Docker credentials for " + server;
        const HashTablePtr attributes = attributes_of({{"server", &server}});
        ItemList items =
            search_items(calls, service.get(), docker_schema(), attributes.get(), context);
        if (items.get() == nullptr && unlock_hidden(calls, service.get(), docker_schema(),
                                                    attributes.get(), "server", context)) {
            items = search_items(calls, service.get(), docker_schema(), attributes.get(), context);
        }
        if (items.get() == nullptr) return false;
        delete_items(calls, service.get(), items, items.items(), context);
        return true;
    });
}

std::vector<credentials::DockerItemInfo> LibsecretKeyring::docker_items() {
    return attempt([&] {
        const Calls calls{*watchdog_, call_timeout_, unlock_timeout_};
        const ServicePtr service = connect(calls);
        const std::string context = "listing the Docker credentials in the keyring";
        const HashTablePtr none(g_hash_table_new(g_str_hash, g_str_equal));
        (void)unlock_hidden(calls, service.get(), docker_schema(), none.get(), "server", context);
        const ItemList items = all_items(calls, service.get(), docker_schema(), context);
        std::vector<credentials::DockerItemInfo> out;
        for (SecretItem* item : items.items()) {
            std::string server = attribute(item, "server");
            if (server.empty()) continue;
            out.push_back({std::move(server), attribute(item, "username"), label_of(item),
                           modified_of(item)});
        }
        std::sort(out.begin(), out.end(),
                  [](const auto& a, const auto& b) { return a.server < b.server; });
        return out;
    });
}

}  // namespace hostkeeper::daemon::libsecret
