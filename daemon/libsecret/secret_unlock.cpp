#include "daemon/libsecret/secret_unlock.hpp"

#include "proto/error.hpp"

namespace hostkeeper::daemon::libsecret {
using proto::Error;
using proto::ErrorCode;

namespace {

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

}  // namespace

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

// Through an item proxy and secret_service_unlock_sync: libsecret
// 0.20.5's secret_service_unlock_dbus_paths_sync leaks its prompt object
// (LeakSanitizer). Only the locked path pays for the proxy.
void unlock_path(const Calls& calls, SecretService* service, const std::string& path,
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

CollectionPtr default_collection(const Calls& calls, SecretService* service,
                                 const std::string& context) {
    const Call call(calls.watchdog, calls.plain());
    GError* error = nullptr;
    CollectionPtr collection(secret_collection_for_alias_sync(
        service, SECRET_COLLECTION_DEFAULT, SECRET_COLLECTION_NONE, call.cancellable(), &error));
    if (error != nullptr) call.fail(error, context);
    return collection;
}

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

}  // namespace hostkeeper::daemon::libsecret
