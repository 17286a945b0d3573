#include "daemon/libsecret/item_schemas.hpp"

#include <cstddef>
#include <memory>
#include <vector>

#include "proto/error.hpp"

namespace hostkeeper::daemon::libsecret {

namespace {

// The schema of a kind: its name and its string attributes.
SecretSchema make_schema(const credentials::SecretServiceItems& items) {
    SecretSchema s{};
    s.name = items.schema_name;
    s.flags = SECRET_SCHEMA_NONE;
    std::size_t i = 0;
    for (const char* attribute : items.schema_attributes) {
        s.attributes[i].name = attribute;
        s.attributes[i].type = SECRET_SCHEMA_ATTRIBUTE_STRING;
        ++i;
    }
    return s;
}

// Every kind's schema, made once; the schemas stay where they were made.
struct Schemas {
    std::vector<std::unique_ptr<SecretSchema>> schemas;
    std::vector<ItemSchema> kinds;

    Schemas() {
        for (const credentials::ItemKindDescription& description : credentials::item_kinds()) {
            schemas.push_back(
                std::make_unique<SecretSchema>(make_schema(description.secret_service)));
            kinds.push_back({description.secret_service, schemas.back().get()});
        }
    }
};

}  // namespace

const ItemSchema& item_schema(credentials::ItemKind kind) {
    static const Schemas all;
    for (std::size_t i = 0; i < all.kinds.size(); ++i)
        if (credentials::item_kinds()[i].kind == kind) return all.kinds[i];
    throw proto::Error(proto::ErrorCode::keyring_error, "an item of an unknown kind");
}

}  // namespace hostkeeper::daemon::libsecret
