#pragma once
// Unlocking in the Secret Service: items and collections, which may show a
// prompt (bounded by the unlock timeout); keyring_locked when what had to
// be unlocked stays locked.

#include <string>

#include "daemon/libsecret/bounded_calls.hpp"
#include "daemon/libsecret/glib_handles.hpp"

namespace hostkeeper::daemon::libsecret {

// Asks the Secret Service to unlock `objects` (items or collections).
void unlock(const Calls& calls, SecretService* service, GList* objects, const std::string& context);
// unlock() of one object (an item or a collection).
void unlock_one(const Calls& calls, SecretService* service, gpointer object,
                const std::string& context);
// unlock() of the locked ones among `items`; nothing when none is.
void unlock_locked(const Calls& calls, SecretService* service, const ItemList& items,
                   const std::string& context);
// Unlocks one item by its object path.
void unlock_path(const Calls& calls, SecretService* service, const std::string& path,
                 const std::string& context);

// The default collection, or none; never unlocks.
CollectionPtr default_collection(const Calls& calls, SecretService* service,
                                 const std::string& context);
// The default collection, unlocked; no_default_collection when there is
// none, the message saying what it was wanted for (`purpose`).
CollectionPtr unlocked_default_collection(const Calls& calls, SecretService* service,
                                          const std::string& context, const std::string& purpose);

}  // namespace hostkeeper::daemon::libsecret
