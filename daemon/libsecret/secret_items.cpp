#include "daemon/libsecret/secret_items.hpp"

#include <chrono>
#include <cstdint>

#include "daemon/libsecret/secret_unlock.hpp"
#include "proto/error.hpp"

namespace hostkeeper::daemon::libsecret {
using proto::Error;
using proto::ErrorCode;
using proto::Secret;

namespace {

// The text of a secret value; keyring_locked when there is none.
Secret value_text(const ValuePtr& value, const std::string& context) {
    if (!value)
        throw Error(ErrorCode::keyring_locked,
                    context + ": the Secret Service returned no secret (locked?)");
    gsize length = 0;
    const gchar* data = secret_value_get(value.get(), &length);
    return Secret(std::string_view(data, length));
}

}  // namespace

HashTablePtr attributes_of(
    std::initializer_list<std::pair<const char*, const std::string*>> pairs) {
    HashTablePtr attributes(g_hash_table_new(g_str_hash, g_str_equal));
    for (const auto& [name, value] : pairs) {
        g_hash_table_insert(attributes.get(), const_cast<char*>(name),
                            const_cast<char*>(value->c_str()));
    }
    return attributes;
}

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

void create_item(const Calls& calls, SecretService* service, const SecretSchema* schema,
                 GHashTable* attributes, const std::string& label, std::string_view text,
                 const std::string& context, const std::string& what) {
    const CollectionPtr collection =
        unlocked_default_collection(calls, service, context, "to store " + what + " in");
    const ValuePtr value(
        secret_value_new(text.data(), static_cast<gssize>(text.size()), "text/plain"));
    const Call call(calls.watchdog, calls.plain());
    GError* error = nullptr;
    const ItemPtr item(secret_item_create_sync(collection.get(), schema, attributes, label.c_str(),
                                               value.get(), SECRET_ITEM_CREATE_REPLACE,
                                               call.cancellable(), &error));
    if (!item) call.fail(error, context);
}

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
    return value_text(value, context);
}

Secret path_secret(const Calls& calls, SecretService* service, const std::string& path,
                   const std::string& context) {
    ValuePtr value;
    {
        const Call call(calls.watchdog, calls.plain());
        GError* error = nullptr;
        if (secret_service_ensure_session_sync(service, call.cancellable(), &error) == FALSE)
            call.fail(error, context);
        value.reset(secret_service_get_secret_for_dbus_path_sync(service, path.c_str(),
                                                                 call.cancellable(), &error));
        if (error != nullptr) call.fail(error, context);
    }
    return value_text(value, context);
}

}  // namespace hostkeeper::daemon::libsecret
