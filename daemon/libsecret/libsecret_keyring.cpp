#include "daemon/libsecret/libsecret_keyring.hpp"

#include <algorithm>
#include <utility>
#include <vector>

#include "daemon/libsecret/bounded_calls.hpp"
#include "daemon/libsecret/glib_handles.hpp"
#include "daemon/libsecret/item_schemas.hpp"
#include "daemon/libsecret/secret_items.hpp"
#include "daemon/libsecret/secret_search.hpp"
#include "daemon/libsecret/secret_unlock.hpp"
#include "proto/error.hpp"
#include "proto/session_bus.hpp"

namespace hostkeeper::daemon::libsecret {
using credentials::ItemKey;
using credentials::ListedItem;
using credentials::StoredItem;
using proto::Error;
using proto::Secret;

namespace {

// The cold path of a kind without a username: two D-Bus calls on the
// connection (and session) kept from before, as few as a one-shot
// secret_password_lookup_sync makes after it connects: SearchItems, then
// GetSecret of the item's path. No item proxy is made (each would cost a
// Properties.GetAll and signal subscriptions). SearchItems answers locked
// and unlocked items apart, so a locked item is unlocked (or reported
// locked), never taken for "none".
std::optional<StoredItem> lookup_by_path(const Calls& calls, SecretService* service,
                                         const ItemSchema& kind, const ItemKey& key) {
    const HashTablePtr attributes = attributes_of({{kind.key_attribute, &key.key}});
    const std::optional<FoundPath> found = search_unlocking_hidden(
        calls, service, kind, attributes.get(), kind.looking + key.key, [&] {
            return find_path(calls, service, kind.schema, attributes.get(),
                             kind.searching + key.key);
        });
    if (!found) return std::nullopt;
    const std::string context = kind.reading + key.key;
    if (found->locked) unlock_path(calls, service, found->path, context);
    return StoredItem{key, {}, path_secret(calls, service, found->path, context)};
}

// A kind with a username: the item's proxy, which holds its attributes.
std::optional<StoredItem> lookup_by_proxy(const Calls& calls, SecretService* service,
                                          const ItemSchema& kind, const ItemKey& key) {
    const HashTablePtr attributes = attributes_of({{kind.key_attribute, &key.key}});
    const std::string context = kind.searching + key.key;
    const ItemList items = search_unlocking_hidden(
        calls, service, kind, attributes.get(), kind.looking + key.key,
        [&] { return search_items(calls, service, kind.schema, attributes.get(), context); });
    if (items.empty()) return std::nullopt;
    SecretItem* item = items.items().front();
    Secret secret = item_secret(calls, service, item, kind.reading + key.key);
    return StoredItem{key, attribute(item, kind.username_attribute), std::move(secret)};
}

void store_item(const Calls& calls, SecretService* service, const StoredItem& item) {
    const ItemSchema& kind = item_schema(item.key.kind);
    const std::string& key = item.key.key;
    const std::string context = kind.storing + key;
    const HashTablePtr attributes =
        kind.username_attribute == nullptr
            ? attributes_of({{kind.key_attribute, &key}})
            : attributes_of(
                  {{kind.key_attribute, &key}, {kind.username_attribute, &item.username}});
    // Borrowed by the table: they live until the item is created.
    const std::vector<std::pair<const char*, std::string>> more =
        kind.more_attributes != nullptr ? kind.more_attributes(key)
                                        : std::vector<std::pair<const char*, std::string>>{};
    for (const auto& [name, value] : more)
        g_hash_table_insert(attributes.get(), const_cast<char*>(name),
                            const_cast<char*>(value.c_str()));
    const std::string label =
        kind.label_prefix + (kind.shown_key != nullptr ? kind.shown_key(key) : key);
    create_item(calls, service, kind.schema, attributes.get(), label, item.secret.view(), context,
                key);
    if (kind.username_attribute == nullptr) return;
    // The key's items under another username: one key, one item. Only
    // after the new one is written, so a failure loses nothing.
    const HashTablePtr by_key = attributes_of({{kind.key_attribute, &key}});
    const ItemList items = search_items(calls, service, kind.schema, by_key.get(), context);
    std::vector<SecretItem*> others;
    for (SecretItem* found : items.items()) {
        if (attribute(found, kind.username_attribute) != item.username) others.push_back(found);
    }
    if (!others.empty()) delete_items(calls, service, items, others, context);
}

bool remove_item(const Calls& calls, SecretService* service, const ItemKey& key) {
    const ItemSchema& kind = item_schema(key.kind);
    const std::string context = kind.removing + key.key;
    const HashTablePtr attributes = attributes_of({{kind.key_attribute, &key.key}});
    const ItemList items =
        search_unlocking_hidden(calls, service, kind, attributes.get(), context, [&] {
            return search_items(calls, service, kind.schema, attributes.get(),
                                kind.remove_searching + key.key);
        });
    if (items.empty()) return false;
    delete_items(calls, service, items, items.items(), context);
    return true;
}

// Every item of the kind's schema, in any collection, locked or not:
// attributes, labels and times are readable while locked.
std::vector<ListedItem> list_items(const Calls& calls, SecretService* service,
                                   const ItemSchema& kind) {
    const HashTablePtr none(g_hash_table_new(g_str_hash, g_str_equal));
    (void)unlock_hidden(calls, service, kind, none.get(), kind.listing);
    const ItemList items = search_items(calls, service, kind.schema, none.get(), kind.listing);
    std::vector<ListedItem> out;
    for (SecretItem* item : items.items()) {
        std::string key = attribute(item, kind.key_attribute);
        if (key.empty()) continue;
        std::optional<std::string> username;
        if (kind.username_attribute != nullptr) username = attribute(item, kind.username_attribute);
        out.push_back({std::move(key), std::move(username), label_of(item), modified_of(item)});
    }
    std::sort(out.begin(), out.end(), [](const auto& a, const auto& b) { return a.key < b.key; });
    return out;
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

// Runs one operation on the service's connection; on a stale connection
// (the service restarted under us: libsecret's cached proxy still speaks to
// the old process's unique name, objects and session), once more on a new
// one.
template <typename Operation>
auto LibsecretKeyring::run(Operation operation) {
    const DrainMainContext drain;
    // Signals queued for the cached proxies (NameOwnerChanged, ...) first.
    while (g_main_context_iteration(nullptr, FALSE) != FALSE) {
    }
    if (replaced_.exchange(false)) secret_service_disconnect();
    const auto once = [&] {
        const Calls calls{*watchdog_, call_timeout_, unlock_timeout_};
        const ServicePtr service = connect(calls);
        return operation(calls, service.get());
    };
    try {
        return once();
    } catch (const StaleConnection&) {
        // fail() dropped the connection; the next connect() makes a new one.
    }
    return once();
}

std::optional<StoredItem> LibsecretKeyring::lookup(const ItemKey& key) {
    return run([&](const Calls& calls, SecretService* service) {
        const ItemSchema& kind = item_schema(key.kind);
        if (kind.username_attribute == nullptr) return lookup_by_path(calls, service, kind, key);
        return lookup_by_proxy(calls, service, kind, key);
    });
}

void LibsecretKeyring::store(const StoredItem& item) {
    run([&](const Calls& calls, SecretService* service) { store_item(calls, service, item); });
}

bool LibsecretKeyring::remove(const ItemKey& key) {
    return run([&](const Calls& calls, SecretService* service) {
        return remove_item(calls, service, key);
    });
}

std::vector<ListedItem> LibsecretKeyring::list(credentials::ItemKind kind) {
    return run([&](const Calls& calls, SecretService* service) {
        return list_items(calls, service, item_schema(kind));
    });
}

LibsecretKeyring::Probe LibsecretKeyring::probe() {
    const std::string bus = proto::session_bus_address();
    if (bus.empty()) {
        return {false,
                "no D-Bus session bus (DBUS_SESSION_BUS_ADDRESS is unset and there is no "
                "$XDG_RUNTIME_DIR/bus)"};
    }
    try {
        return run([&](const Calls& calls, SecretService* service) {
            const CollectionPtr collection =
                default_collection(calls, service, "asking for the default collection");
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
    run([&](const Calls& calls, SecretService* service) {
        (void)unlocked_default_collection(calls, service, "unlocking the keyring", "to unlock");
    });
}

void LibsecretKeyring::unlock_with_password(const Secret& password) {
    run([&](const Calls& calls, SecretService* service) {
        libsecret::unlock_with_password(calls, service, password);
    });
}

}  // namespace hostkeeper::daemon::libsecret
