#include "daemon/credentials/terraform_items.hpp"

#include <exception>
#include <utility>

#include "proto/json.hpp"

namespace hostkeeper::daemon::credentials {

std::optional<proto::Secret> token_of(const proto::Secret& credentials) {
    try {
        proto::Json object = proto::parse_json(credentials.view());
        const proto::ScrubGuard guard(object);
        if (!object.is_object()) return std::nullopt;
        const auto token = object.find("token");
        if (token != object.end() && token->is_string())
            return proto::Secret(token->get_ref<const std::string&>());
    } catch (const std::exception&) {
        // Stored objects are valid JSON (they are checked when stored).
    }
    return std::nullopt;
}

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
