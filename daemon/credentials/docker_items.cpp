#include "daemon/credentials/docker_items.hpp"

#include <utility>

namespace hostkeeper::daemon::credentials {

std::optional<DockerCredentials> DockerItems::lookup(const std::string& server) {
    std::optional<StoredItem> found = keyring_.lookup({ItemKind::docker, server});
    if (!found) return std::nullopt;
    return DockerCredentials{server, std::move(found->username), std::move(found->secret)};
}

void DockerItems::store(const DockerCredentials& credentials) {
    keyring_.store(
        {{ItemKind::docker, credentials.server}, credentials.username, credentials.secret.clone()});
}

bool DockerItems::remove(const std::string& server) {
    return keyring_.remove({ItemKind::docker, server});
}

std::vector<DockerItemInfo> DockerItems::items() {
    std::vector<DockerItemInfo> out;
    for (ListedItem& item : keyring_.list(ItemKind::docker))
        out.push_back(
            {std::move(item.key), std::move(item.username), std::move(item.label), item.stored});
    return out;
}

}  // namespace hostkeeper::daemon::credentials
