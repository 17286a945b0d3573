#include "daemon/credentials/git_items.hpp"

#include <algorithm>
#include <chrono>
#include <utility>

#include "daemon/credentials/stored_object.hpp"
#include "proto/error.hpp"
#include "proto/json.hpp"

namespace hostkeeper::daemon::credentials {
using proto::GitItemKey;
using proto::Secret;

proto::Secret git_secret_text(const GitCredential& credential) {
    proto::Json json = {{"password", std::string(credential.password.view())}};
    const proto::ScrubGuard guard(json);
    if (credential.password_expiry_utc)
        json["password_expiry_utc"] = *credential.password_expiry_utc;
    if (credential.oauth_refresh_token)
        json["oauth_refresh_token"] = std::string(credential.oauth_refresh_token->view());
    std::string text = json.dump();
    return Secret::adopt(text);
}

GitCredential git_credential_of(const GitItemKey& key, const std::string& url, const Secret& text) {
    const std::string what = "the git item " + url;
    proto::Json json = stored_object(text, what);
    const proto::ScrubGuard guard(json);
    const std::string& password = stored_string(json, "password", what);
    GitCredential out{key, Secret(password), std::nullopt, std::nullopt};
    if (const auto expiry = json.find("password_expiry_utc");
        expiry != json.end() && expiry->is_number_unsigned())
        out.password_expiry_utc = expiry->get<std::uint64_t>();
    if (const auto refresh = json.find("oauth_refresh_token");
        refresh != json.end() && refresh->is_string())
        out.oauth_refresh_token = Secret(refresh->get_ref<const std::string&>());
    return out;
}

std::optional<GitCredential> GitItems::lookup(const GitItemKey& key) {
    const std::string url = proto::git_item_key(key);
    const std::optional<StoredItem> found = keyring_.lookup({ItemKind::git, url});
    if (!found) return std::nullopt;
    return git_credential_of(key, url, found->secret);
}

void GitItems::store(const GitCredential& credential) {
    keyring_.store({{ItemKind::git, proto::git_item_key(credential.key)},
                    credential.key.username,
                    git_secret_text(credential)});
}

bool GitItems::remove(const GitItemKey& key) {
    return keyring_.remove({ItemKind::git, proto::git_item_key(key)});
}

std::vector<GitItemInfo> GitItems::items() {
    std::vector<GitItemInfo> out;
    for (ListedItem& item : keyring_.list(ItemKind::git)) {
        std::optional<GitItemKey> key = proto::parse_git_item_key(item.key);
        if (!key) continue;
        out.push_back({std::move(item.key), std::move(*key), std::move(item.label), item.stored});
    }
    return out;
}

std::optional<GitCredential> GitItems::find(const GitItemKey& request, WallTime now,
                                            std::set<std::string>* hosts) {
    std::vector<GitItemInfo> candidates;
    for (GitItemInfo& item : items()) {
        if (hosts != nullptr) hosts->insert(item.key.host);
        if (item.key.host != request.host) continue;
        if (!item.key.path.empty() && item.key.path != request.path) continue;
        if (!request.username.empty() && item.key.username != request.username) continue;
        candidates.push_back(std::move(item));
    }
    // The most specific (a path) first, then the most recently stored.
    std::stable_sort(candidates.begin(), candidates.end(), [](const auto& a, const auto& b) {
        if (a.key.path.empty() != b.key.path.empty()) return !a.key.path.empty();
        return a.stored.value_or(WallTime{}) > b.stored.value_or(WallTime{});
    });
    const auto seconds = std::chrono::duration_cast<std::chrono::seconds>(now.time_since_epoch());
    const auto now_utc = static_cast<std::uint64_t>(std::max<std::int64_t>(0, seconds.count()));
    for (const GitItemInfo& item : candidates) {
        std::optional<GitCredential> found = lookup(item.key);
        if (!found) continue;
        if (found->password_expiry_utc && *found->password_expiry_utc <= now_utc) continue;
        return found;
    }
    return std::nullopt;
}

std::size_t GitItems::erase(const GitItemKey& request, const std::optional<Secret>& password) {
    std::size_t erased = 0;
    for (const GitItemInfo& item : items()) {
        // The exact path; with a password, also an item without a path that
        // answered for this one (git_get's rule) and holds that password.
        const bool path_matches =
            item.key.path == request.path || (password && item.key.path.empty());
        if (item.key.host != request.host || !path_matches) continue;
        if (!request.username.empty() && item.key.username != request.username) continue;
        if (password) {
            const std::optional<GitCredential> found = lookup(item.key);
            if (!found || found->password.view() != password->view()) continue;
        }
        if (remove(item.key)) ++erased;
    }
    return erased;
}

}  // namespace hostkeeper::daemon::credentials
