#pragma once
// Searching the Secret Service for an item kind's items, and the locked
// items such a search cannot see. A locked item is never taken for "none":
// when a search finds nothing, the locked items that may be ours are
// unlocked (which may prompt) and the search is made again.

#include <optional>
#include <string>

#include "daemon/libsecret/bounded_calls.hpp"
#include "daemon/libsecret/glib_handles.hpp"
#include "daemon/libsecret/item_schemas.hpp"

namespace hostkeeper::daemon::libsecret {

// The object paths a search finds (SearchItems: no item proxies), unlocked
// and locked apart. `schema` may be null: any application's items.
struct FoundPaths {
    StrvPtr unlocked;
    StrvPtr locked;
};
FoundPaths search_paths(const Calls& calls, SecretService* service, const SecretSchema* schema,
                        GHashTable* attributes, const std::string& context);

// The object path of an item (an unlocked one first), by a search that
// names the schema; nullopt when it finds none.
struct FoundPath {
    std::string path;
    bool locked = false;
};
std::optional<FoundPath> find_path(const Calls& calls, SecretService* service,
                                   const SecretSchema* schema, GHashTable* attributes,
                                   const std::string& context);

// The items of `schema` that match `attributes` (all of the schema's with
// an empty table), in any collection, locked or not, as proxies.
ItemList search_items(const Calls& calls, SecretService* service, const SecretSchema* schema,
                      GHashTable* attributes, const std::string& context);

// Unlocks the locked items a search that names the kind's schema misses
// (a keyring gnome-keyring loaded locked shows hashed attributes) and that
// may be ours; another application's items are left alone. True when it
// unlocked something: search again. keyring_locked when they stay locked.
bool unlock_hidden(const Calls& calls, SecretService* service, const ItemSchema& kind,
                   GHashTable* attributes, const std::string& context);

inline bool found_nothing(const ItemList& items) {
    return items.empty();
}
inline bool found_nothing(const std::optional<FoundPath>& path) {
    return !path;
}

// `search()`; when it finds nothing, unlock_hidden() and, when that
// unlocked something, `search()` again.
template <typename Search>
auto search_unlocking_hidden(const Calls& calls, SecretService* service, const ItemSchema& kind,
                             GHashTable* attributes, const std::string& context, Search search) {
    auto found = search();
    if (found_nothing(found) && unlock_hidden(calls, service, kind, attributes, context))
        found = search();
    return found;
}

}  // namespace hostkeeper::daemon::libsecret
