#pragma once
// Items in the Secret Service: their attributes, labels and times as
// listed, their secrets (by object path or through a proxy), creating and
// deleting them. Each may unlock what it needs first (which may prompt).

#include <initializer_list>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "daemon/credentials/keyring.hpp"
#include "daemon/libsecret/bounded_calls.hpp"
#include "daemon/libsecret/glib_handles.hpp"
#include "proto/secret.hpp"

namespace hostkeeper::daemon::libsecret {

// An attribute table that borrows its strings: they must outlive it.
HashTablePtr attributes_of(std::initializer_list<std::pair<const char*, const std::string*>> pairs);
// An item's string attribute, or "".
std::string attribute(SecretItem* item, const char* name);
std::string label_of(SecretItem* item);
std::optional<credentials::WallTime> modified_of(SecretItem* item);

// Creates (or replaces: same schema and attributes) an item in the default
// collection, which may have to be unlocked first; `what` names it in the
// message when there is no default collection.
void create_item(const Calls& calls, SecretService* service, const SecretSchema* schema,
                 GHashTable* attributes, const std::string& label, std::string_view text,
                 const std::string& context, const std::string& what);
// Deletes `which`, some of `items` (unlocking the locked ones of `items`
// first).
void delete_items(const Calls& calls, SecretService* service, const ItemList& items,
                  const std::vector<SecretItem*>& which, const std::string& context);
// One item's secret through its proxy, unlocking it first if need be.
proto::Secret item_secret(const Calls& calls, SecretService* service, SecretItem* item,
                          const std::string& context);
// An item's secret by its object path (GetSecret, no proxy), on the
// service's session; the item must be unlocked.
proto::Secret path_secret(const Calls& calls, SecretService* service, const std::string& path,
                          const std::string& context);

}  // namespace hostkeeper::daemon::libsecret
