#include "daemon/credentials/terraform_items.hpp"

#include <utility>

namespace hostkeeper::daemon::credentials {

std::optional<proto::Secret> TerraformItems::lookup(const std::string& host) {
    std::optional<StoredItem> found = keyring_.lookup({ItemKind::terraform, host});
    if (!found) return std::nullopt;
    return std::move(found->secret);
}

void TerraformItems::store(const std::string& host, const proto::Secret& credentials) {
    keyring_.store({{ItemKind::terraform, host}, {}, credentials.clone()});
}

bool TerraformItems::remove(const std::string& host) {
    return keyring_.remove({ItemKind::terraform, host});
}

std::vector<ItemInfo> TerraformItems::items() {
    std::vector<ItemInfo> out;
    for (ListedItem& item : keyring_.list(ItemKind::terraform)) {
        // One per host: the Secret Service may hold two items for one.
        if (!out.empty() && out.back().host == item.key) continue;
        out.push_back({std::move(item.key), std::move(item.label), item.stored});
    }
    return out;
}

std::vector<std::string> TerraformItems::hosts() {
    std::vector<std::string> out;
    for (ItemInfo& item : items()) out.push_back(std::move(item.host));
    return out;
}

}  // namespace hostkeeper::daemon::credentials
