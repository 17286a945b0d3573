#include "daemon/libsecret/secret_search.hpp"

#include <string_view>

#include "daemon/libsecret/secret_unlock.hpp"

namespace hostkeeper::daemon::libsecret {

namespace {

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
    const FoundPaths found = search_paths(calls, service, nullptr, attributes, context);
    ItemList items(nullptr);
    for (gchar** path = found.locked.get(); path != nullptr && *path != nullptr; ++path) {
        const Call call(calls.watchdog, calls.plain());
        GError* error = nullptr;
        SecretItem* item = secret_item_new_for_dbus_path_sync(service, *path, SECRET_ITEM_NONE,
                                                              call.cancellable(), &error);
        if (item == nullptr) call.fail(error, context);
        items.append(item);
    }
    return items;
}

}  // namespace

FoundPaths search_paths(const Calls& calls, SecretService* service, const SecretSchema* schema,
                        GHashTable* attributes, const std::string& context) {
    const Call call(calls.watchdog, calls.plain());
    GError* error = nullptr;
    gchar** unlocked_raw = nullptr;
    gchar** locked_raw = nullptr;
    const gboolean ok = secret_service_search_for_dbus_paths_sync(
        service, schema, attributes, call.cancellable(), &unlocked_raw, &locked_raw, &error);
    FoundPaths found{StrvPtr(unlocked_raw), StrvPtr(locked_raw)};
    if (ok == FALSE) call.fail(error, context);
    return found;
}

std::optional<FoundPath> find_path(const Calls& calls, SecretService* service,
                                   const SecretSchema* schema, GHashTable* attributes,
                                   const std::string& context) {
    const FoundPaths found = search_paths(calls, service, schema, attributes, context);
    if (found.unlocked && found.unlocked.get()[0] != nullptr)
        return FoundPath{found.unlocked.get()[0], false};
    if (found.locked && found.locked.get()[0] != nullptr)
        return FoundPath{found.locked.get()[0], true};
    return std::nullopt;
}

ItemList search_items(const Calls& calls, SecretService* service, const SecretSchema* schema,
                      GHashTable* attributes, const std::string& context) {
    const Call call(calls.watchdog, calls.plain());
    GError* error = nullptr;
    // No UNLOCK and no LOAD_SECRETS flag: attributes are searchable while
    // locked, so a locked item is found (and never mistaken for "none").
    GList* found = secret_service_search_sync(service, schema, attributes, SECRET_SEARCH_ALL,
                                              call.cancellable(), &error);
    if (error != nullptr) {
        g_list_free_full(found, g_object_unref);
        call.fail(error, context);
    }
    return ItemList(found);
}

// Locked items whose attributes are readable are found by the search that
// names the schema, and listed without unlocking: only those that show no
// schema, or gnome-keyring's hash of ours, are candidates.
bool unlock_hidden(const Calls& calls, SecretService* service, const ItemSchema& kind,
                   GHashTable* attributes, const std::string& context) {
    const ItemList locked = locked_matches(calls, service, attributes, context);
    GList* candidates = nullptr;
    for (SecretItem* item : locked.items()) {
        if (whose(item, kind.schema->name, kind.key_attribute) == Whose::unknown)
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

}  // namespace hostkeeper::daemon::libsecret
