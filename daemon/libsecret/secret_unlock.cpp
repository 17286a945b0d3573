#include "daemon/libsecret/secret_unlock.hpp"

#include <string_view>

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
            " s); unlock it (hostkeeper unlock in a terminal, Seahorse, or logging in to your "
            "desktop session) and try again");
}

// The default collection; no_default_collection when there is none.
CollectionPtr existing_default_collection(const Calls& calls, SecretService* service,
                                          const std::string& context, const std::string& purpose) {
    CollectionPtr collection = default_collection(calls, service, context);
    if (!collection) {
        throw Error(ErrorCode::no_default_collection,
                    "the Secret Service has no default collection " + purpose +
                        ": create a keyring and make it the default (for example in Seahorse)");
    }
    return collection;
}

// gnome-keyring's interface for its own tools (gnome-keyring's
// daemon/dbus/org.gnome.keyring.InternalUnsupportedGuiltRiddenInterface.xml).
constexpr const char* kGnomeKeyringInterface =
    "org.gnome.keyring.InternalUnsupportedGuiltRiddenInterface";
// What gnome-keyring answers a wrong password with (gkd-secret-error.c).
constexpr std::string_view kPasswordDenied = "org.gnome.keyring.Error.Denied";

// The D-Bus error name of a remote error, or "".
std::string remote_error_name(const GError* error) {
    gchar* raw = g_dbus_error_get_remote_error(error);
    std::string name = raw != nullptr ? raw : "";
    g_free(raw);
    return name;
}

// A Secret Service that lacks the method (or the interface, or the object).
bool no_such_method(const std::string& name) {
    return name == "org.freedesktop.DBus.Error.UnknownMethod" ||
           name == "org.freedesktop.DBus.Error.UnknownInterface" ||
           name == "org.freedesktop.DBus.Error.UnknownObject" ||
           name == "org.freedesktop.DBus.Error.NotSupported";
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
    CollectionPtr collection = existing_default_collection(calls, service, context, purpose);
    if (secret_collection_get_locked(collection.get()) != FALSE)
        unlock_one(calls, service, collection.get(), context);
    return collection;
}

void unlock_with_password(const Calls& calls, SecretService* service,
                          const proto::Secret& password) {
    const std::string context = "unlocking the keyring with its password";
    const CollectionPtr collection =
        existing_default_collection(calls, service, context, "to unlock");
    if (secret_collection_get_locked(collection.get()) == FALSE) return;
    {
        const Call call(calls.watchdog, calls.plain());
        GError* error = nullptr;
        if (secret_service_ensure_session_sync(service, call.cancellable(), &error) == FALSE)
            call.fail(error, context);
    }
    // libsecret copies the password into its scrubbed (egg_secure) memory
    // and encrypts it with the session's key; the variant is floating, and
    // the call's parameters take it over.
    const ValuePtr value(secret_value_new(password.view().data(),
                                          static_cast<gssize>(password.size()), "text/plain"));
    GVariant* secret = secret_service_encode_dbus_secret(service, value.get());
    if (secret == nullptr)
        throw Error(ErrorCode::keyring_error, context + ": libsecret has no session to send it in");
    auto* proxy = G_DBUS_PROXY(service);
    const Call call(calls.watchdog, calls.plain());
    GError* error = nullptr;
    GVariant* reply = g_dbus_connection_call_sync(
        g_dbus_proxy_get_connection(proxy), g_dbus_proxy_get_name(proxy),
        g_dbus_proxy_get_object_path(proxy), kGnomeKeyringInterface, "UnlockWithMasterPassword",
        g_variant_new("(o@(oayays))", g_dbus_proxy_get_object_path(G_DBUS_PROXY(collection.get())),
                      secret),
        G_VARIANT_TYPE_UNIT, G_DBUS_CALL_FLAGS_NO_AUTO_START, -1, call.cancellable(), &error);
    if (reply != nullptr) {
        g_variant_unref(reply);
        return;
    }
    const std::string name = remote_error_name(error);
    if (name == kPasswordDenied) {
        g_error_free(error);
        throw Error(ErrorCode::keyring_locked,
                    "the keyring's password was not accepted: the keyring stays locked");
    }
    if (no_such_method(name)) {
        g_error_free(error);
        throw Error(ErrorCode::keyring_error,
                    "the Secret Service on this session bus is not gnome-keyring and takes no "
                    "password over D-Bus (gnome-keyring's UnlockWithMasterPassword): unlock it "
                    "in its own window (KeePassXC: unlock the database), or in your desktop "
                    "session, then try again");
    }
    call.fail(error, context);
}

}  // namespace hostkeeper::daemon::libsecret
