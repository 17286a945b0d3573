#pragma once
// Unlocking in the Secret Service: items and collections, which may show a
// prompt (bounded by the unlock timeout); keyring_locked when what had to
// be unlocked stays locked. And the default collection unlocked with its
// password, where no prompt can be shown (gnome-keyring only).

#include <string>

#include "daemon/libsecret/bounded_calls.hpp"
#include "daemon/libsecret/glib_handles.hpp"
#include "proto/secret.hpp"

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

// Unlocks the default collection with its password, for a user who cannot
// answer a prompt (no desktop session): the Secret Service API has no such
// method, so this is gnome-keyring's own, UnlockWithMasterPassword of
// org.gnome.keyring.InternalUnsupportedGuiltRiddenInterface on the
// service's object, which its tools use. The password goes as a Secret
// Service secret in libsecret's session (dh-ietf1024-sha256-aes128-cbc-pkcs7
// when libsecret has its crypto, which Debian's has; else "plain"), held
// in libsecret's scrubbed memory. Nothing when the collection is not
// locked. Throws keyring_locked when the password is refused (the
// collection stays locked), keyring_error when the Secret Service is not
// one that has the method (KeePassXC, ...), no_default_collection.
void unlock_with_password(const Calls& calls, SecretService* service,
                          const proto::Secret& password);

}  // namespace hostkeeper::daemon::libsecret
