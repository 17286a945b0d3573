#pragma once
// Each kind of item as the Secret Service keeps it: the kind's
// description (credentials/item_kinds.hpp: schema name, attributes, label,
// the context of messages) with its schema made for libsecret. The
// adapter's operations read it and know nothing else of the kinds.

#include "daemon/credentials/item_kinds.hpp"
#include "daemon/libsecret/glib_handles.hpp"

namespace hostkeeper::daemon::libsecret {

struct ItemSchema : credentials::SecretServiceItems {
    const SecretSchema* schema;
};

const ItemSchema& item_schema(credentials::ItemKind kind);

}  // namespace hostkeeper::daemon::libsecret
