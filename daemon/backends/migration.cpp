#include "daemon/backends/migration.hpp"

#include <spdlog/spdlog.h>

#include <optional>

#include "daemon/credentials/credential_service.hpp"
#include "daemon/credentials/docker_items.hpp"
#include "daemon/credentials/git_items.hpp"
#include "daemon/credentials/terraform_items.hpp"
#include "proto/json.hpp"
#include "proto/secret.hpp"

namespace hostkeeper::daemon::backends {
using proto::Error;
using proto::ErrorCode;
using proto::Secret;

namespace {

// One kind of item as migration sees it: listed by key, read as one
// comparable text, written from that text, removed.
struct ItemKind {
    const char* what;  // "host", "Docker server", "git item"
    std::vector<std::string> (*list)(credentials::Keyring&);
    std::optional<Secret> (*read)(credentials::Keyring&, const std::string&);
    void (*write)(credentials::Keyring&, const std::string&, const Secret&);
    bool (*remove)(credentials::Keyring&, const std::string&);
};

// Hosts: the credentials as hostkeeper serves them (compact JSON).
const ItemKind kHosts{
    "host",
    [](credentials::Keyring& k) { return credentials::TerraformItems(k).hosts(); },
    [](credentials::Keyring& k, const std::string& host) -> std::optional<Secret> {
        std::optional<Secret> text = credentials::TerraformItems(k).lookup(host);
        if (!text) return std::nullopt;
        return credentials::credentials_from_keyring_text(host, *text);
    },
    [](credentials::Keyring& k, const std::string& host, const Secret& text) {
        credentials::TerraformItems(k).store(host, text);
    },
    [](credentials::Keyring& k, const std::string& host) {
        return credentials::TerraformItems(k).remove(host);
    },
};

// Docker credentials: [username, secret] as one JSON text.
const ItemKind kDocker{
    "Docker server",
    [](credentials::Keyring& k) {
        std::vector<std::string> servers;
        for (credentials::DockerItemInfo& item : credentials::DockerItems(k).items())
            servers.push_back(std::move(item.server));
        return servers;
    },
    [](credentials::Keyring& k, const std::string& server) -> std::optional<Secret> {
        const std::optional<credentials::DockerCredentials> found =
            credentials::DockerItems(k).lookup(server);
        if (!found) return std::nullopt;
        proto::Json pair = proto::Json::array({found->username, std::string(found->secret.view())});
        const proto::ScrubGuard guard(pair);
        std::string text = pair.dump();
        return Secret::adopt(text);
    },
    [](credentials::Keyring& k, const std::string& server, const Secret& text) {
        proto::Json pair = proto::parse_json(text.view());
        const proto::ScrubGuard guard(pair);
        credentials::DockerItems(k).store({server, pair.at(0).get<std::string>(),
                                           Secret(pair.at(1).get_ref<const std::string&>())});
    },
    [](credentials::Keyring& k, const std::string& server) {
        return credentials::DockerItems(k).remove(server);
    },
};

// git items: the item's secret (compact JSON), keyed by its URL.
const ItemKind kGit{
    "git item",
    [](credentials::Keyring& k) {
        std::vector<std::string> urls;
        for (credentials::GitItemInfo& item : credentials::GitItems(k).items())
            urls.push_back(std::move(item.url));
        return urls;
    },
    [](credentials::Keyring& k, const std::string& url) -> std::optional<Secret> {
        const std::optional<credentials::GitCredential> found =
            credentials::GitItems(k).lookup(*proto::parse_git_item_key(url));
        if (!found) return std::nullopt;
        return credentials::git_secret_text(*found);
    },
    [](credentials::Keyring& k, const std::string& url, const Secret& text) {
        const proto::GitItemKey key = *proto::parse_git_item_key(url);
        credentials::GitItems(k).store(credentials::git_credential_of(key, url, text));
    },
    [](credentials::Keyring& k, const std::string& url) {
        return credentials::GitItems(k).remove(*proto::parse_git_item_key(url));
    },
};

void take_back(const ItemKind& kind, credentials::Keyring& to, const std::string& key) {
    try {
        (void)kind.remove(to, key);
    } catch (const std::exception& e) {
        spdlog::warn("migrate: could not take {} {} out of {} again: {}", kind.what, key, to.name(),
                     e.what());
    }
}

enum class Copied { written, already_there, gone };

// Copies one item; throws proto::Error, having removed what it wrote.
Copied copy_item(const ItemKind& kind, credentials::Keyring& from, credentials::Keyring& to,
                 const std::string& key) {
    const std::optional<Secret> source = kind.read(from, key);
    if (!source) return Copied::gone;
    if (const std::optional<Secret> existing = kind.read(to, key)) {
        if (existing->view() == source->view()) return Copied::already_there;
        throw Error(ErrorCode::keyring_error,
                    "the " + std::string(to.name()) +
                        " backend already holds other credentials for " + key +
                        "; remove the one that is wrong and run migrate again");
    }
    try {
        kind.write(to, key, *source);
        const std::optional<Secret> back = kind.read(to, key);
        if (!back || back->view() != source->view()) {
            throw Error(ErrorCode::keyring_error, "the credentials read back from " +
                                                      std::string(to.name()) +
                                                      " differ from what was written");
        }
    } catch (const Error&) {
        take_back(kind, to, key);
        throw;
    }
    return Copied::written;
}

MigrationFailure failure(const ItemKind& kind, const std::string& key, ErrorCode code,
                         std::string message) {
    MigrationFailure f;
    (&kind == &kHosts ? f.host : &kind == &kGit ? f.url : f.server) = key;
    f.code = code;
    f.message = std::move(message);
    return f;
}

// What was copied of one kind: `written` by this migration, `copied` in all.
struct Copies {
    std::vector<std::string> written;
    std::vector<std::string> copied;
};

Copies copy_all(const ItemKind& kind, credentials::Keyring& from, credentials::Keyring& to,
                MigrationResult& result) {
    Copies out;
    for (const std::string& key : kind.list(from)) {
        try {
            switch (copy_item(kind, from, to, key)) {
                case Copied::written:
                    out.written.push_back(key);
                    out.copied.push_back(key);
                    break;
                case Copied::already_there:
                    out.copied.push_back(key);
                    break;
                case Copied::gone:
                    break;
            }
        } catch (const Error& e) {
            result.failed.push_back(failure(kind, key, e.code(), e.what()));
        } catch (const std::exception& e) {
            result.failed.push_back(failure(kind, key, ErrorCode::keyring_error, e.what()));
        }
    }
    return out;
}

void remove_sources(const ItemKind& kind, credentials::Keyring& from, const Copies& copies,
                    std::vector<std::string>& migrated, MigrationResult& result) {
    for (const std::string& key : copies.copied) {
        try {
            (void)kind.remove(from, key);
        } catch (const Error& e) {
            result.leftover.push_back(failure(kind, key, e.code(), e.what()));
        }
        migrated.push_back(key);
    }
}

}  // namespace

MigrationResult migrate(credentials::Keyring& from, credentials::Keyring& to) {
    MigrationResult result;
    result.from = std::string(from.name());
    result.to = std::string(to.name());
    const Copies hosts = copy_all(kHosts, from, to, result);
    const Copies docker = copy_all(kDocker, from, to, result);
    const Copies git = copy_all(kGit, from, to, result);
    if (!result.failed.empty()) {
        for (const std::string& host : hosts.written) take_back(kHosts, to, host);
        for (const std::string& server : docker.written) take_back(kDocker, to, server);
        for (const std::string& url : git.written) take_back(kGit, to, url);
        spdlog::info("migrate from {} to {}: {} failed, nothing moved", result.from, result.to,
                     result.failed.size());
        return result;
    }
    remove_sources(kHosts, from, hosts, result.migrated, result);
    remove_sources(kDocker, from, docker, result.docker_migrated, result);
    remove_sources(kGit, from, git, result.git_migrated, result);
    result.switched = true;
    spdlog::info(
        "migrate from {} to {}: {} hosts, {} Docker servers and {} git items moved ({} also "
        "left in the source)",
        result.from, result.to, result.migrated.size(), result.docker_migrated.size(),
        result.git_migrated.size(), result.leftover.size());
    return result;
}

}  // namespace hostkeeper::daemon::backends
