#include "daemon/credentials/item_kinds.hpp"

#include <array>

#include "daemon/credentials/docker_items.hpp"
#include "daemon/credentials/git_items.hpp"
#include "daemon/credentials/keyring.hpp"
#include "daemon/credentials/keyring_text.hpp"
#include "daemon/credentials/stored_object.hpp"
#include "daemon/credentials/terraform_items.hpp"
#include "proto/error.hpp"
#include "proto/git_credential.hpp"
#include "proto/json.hpp"
#include "proto/messages.hpp"

namespace hostkeeper::daemon::credentials {
using proto::Error;
using proto::ErrorCode;
using proto::Secret;

namespace {

// Terraform hosts: pass and migrate keep the credentials object as it is
// (migrate compares it as hostkeeper serves it: compact JSON).
ItemKindDescription terraform() {
    return {
        .kind = ItemKind::terraform,
        .secret_service = {.schema_name = "io.hostkeeper.Credentials",
                           .schema_attributes = {"host"},
                           .key_attribute = "host",
                           .username_attribute = nullptr,
                           .label_prefix = "hostkeeper: ",
                           .searching = "searching the keyring for ",
                           .looking = "reading the credentials for ",
                           .reading = "reading the credentials for ",
                           .storing = "storing the credentials for ",
                           .removing = "removing the credentials for ",
                           .remove_searching = "searching the keyring for ",
                           .listing = "listing hostkeeper's items in the keyring",
                           .more_attributes = nullptr,
                           .shown_key = nullptr},
        .pass = {.folder = "",
                 .encoded = false,
                 .writes_key = nullptr,
                 .too_long = nullptr,
                 .text_of = [](const StoredItem& item) { return item.secret.clone(); },
                 .item_of = [](const std::string& /*entry*/, const ItemKey& key,
                               Secret text) -> StoredItem {
                     return {key, {}, std::move(text)};
                 },
                 .username_inside = false},
        .migration = {
            .what = "host",
            .many = "hosts",
            .reply_moved = "migrated",
            .reply_failed = "host",
            .list = [](Keyring& k) { return TerraformItems(k).hosts(); },
            .read = [](Keyring& k, const std::string& host) -> std::optional<Secret> {
                std::optional<Secret> text = TerraformItems(k).lookup(host);
                if (!text) return std::nullopt;
                return credentials_from_keyring_text(host, *text);
            },
            .write = [](Keyring& k, const std::string& host,
                        const Secret& text) { TerraformItems(k).store(host, text); },
            .remove = [](Keyring& k,
                         const std::string& host) { return TerraformItems(k).remove(host); }},
    };
}

// Docker credentials: pass's entry is {"ServerURL":...,"Username":...,"Secret":...}.
Secret docker_entry_text(const StoredItem& item) {
    proto::Json json = {{"ServerURL", item.key.key},
                        {"Username", item.username},
                        {"Secret", std::string(item.secret.view())}};
    const proto::ScrubGuard json_guard(json);
    std::string text = json.dump();
    return Secret::adopt(text);
}

StoredItem docker_entry_item(const std::string& entry, const ItemKey& key, Secret text) {
    proto::Json json = stored_object(text, entry);
    const proto::ScrubGuard guard(json);
    const char* const otherwise = ": not a Docker credential";
    const std::string& server = stored_string(json, "ServerURL", entry, otherwise);
    std::string username = stored_string(json, "Username", entry, otherwise);
    Secret secret(stored_string(json, "Secret", entry, otherwise));
    if (server != key.key)
        throw Error(ErrorCode::keyring_error,
                    entry + " holds the credentials of another server (" + server + ")");
    return {key, std::move(username), std::move(secret)};
}

// Only names hostkeeper itself writes: the key of a valid server URL.
bool docker_key(std::string_view server) {
    try {
        return proto::docker_server_key(server) == server;
    } catch (const Error&) {
        return false;
    }
}

// migrate compares [username, secret] as one JSON text.
std::optional<Secret> docker_copy_text(Keyring& k, const std::string& server) {
    const std::optional<DockerCredentials> found = DockerItems(k).lookup(server);
    if (!found) return std::nullopt;
    proto::Json pair = proto::Json::array({found->username, std::string(found->secret.view())});
    const proto::ScrubGuard guard(pair);
    std::string text = pair.dump();
    return Secret::adopt(text);
}

void docker_copy(Keyring& k, const std::string& server, const Secret& text) {
    proto::Json pair = proto::parse_json(text.view());
    const proto::ScrubGuard guard(pair);
    DockerItems(k).store(
        {server, pair.at(0).get<std::string>(), Secret(pair.at(1).get_ref<const std::string&>())});
}

ItemKindDescription docker() {
    return {
        .kind = ItemKind::docker,
        .secret_service = {.schema_name = "io.hostkeeper.DockerCredentials",
                           .schema_attributes = {"server", "username"},
                           .key_attribute = "server",
                           .username_attribute = "username",
                           .label_prefix = "hostkeeper docker: ",
                           .searching = "searching the keyring for the Docker credentials of ",
                           .looking = "searching the keyring for the Docker credentials of ",
                           .reading = "reading the Docker credentials for ",
                           .storing = "storing the Docker credentials for ",
                           .removing = "removing the Docker credentials for ",
                           .remove_searching = "removing the Docker credentials for ",
                           .listing = "listing the Docker credentials in the keyring",
                           .more_attributes = nullptr,
                           .shown_key = nullptr},
        .pass = {.folder = "docker",
                 .encoded = true,
                 .writes_key = docker_key,
                 .too_long = "the server URL is too long for a pass entry name (at most 188 bytes)",
                 .text_of = docker_entry_text,
                 .item_of = docker_entry_item,
                 .username_inside = true},
        .migration = {
            .what = "Docker server",
            .many = "Docker servers",
            .reply_moved = "docker_migrated",
            .reply_failed = "server",
            .list =
                [](Keyring& k) {
                    std::vector<std::string> servers;
                    for (DockerItemInfo& item : DockerItems(k).items())
                        servers.push_back(std::move(item.server));
                    return servers;
                },
            .read = docker_copy_text,
            .write = docker_copy,
            .remove = [](Keyring& k,
                         const std::string& server) { return DockerItems(k).remove(server); }},
    };
}

// git items: the Secret Service's attributes for other tools' searches, and
// a label naming the URL without the username.
std::vector<std::pair<const char*, std::string>> git_attributes(const std::string& key) {
    const std::optional<proto::GitItemKey> parsed = proto::parse_git_item_key(key);
    if (!parsed) throw Error(ErrorCode::keyring_error, "not a git item's URL");
    return {{"protocol", std::string(proto::kGitProtocol)},
            {"host", parsed->host},
            {"path", parsed->path},
            {"username", parsed->username}};
}

std::string git_label(const std::string& key) {
    const std::optional<proto::GitItemKey> parsed = proto::parse_git_item_key(key);
    return parsed ? proto::git_item_url(*parsed) : key;
}

// pass's entry is the item's JSON object with "url": the key added; read
// back, "url" must be the key and is dropped.
Secret git_entry_text(const StoredItem& item) {
    proto::Json json;
    try {
        json = proto::parse_json(item.secret.view());
    } catch (const std::exception&) {
        throw Error(ErrorCode::internal, "a git item's secret is not JSON");
    }
    const proto::ScrubGuard guard(json);
    json["url"] = item.key.key;
    std::string text = json.dump();
    return Secret::adopt(text);
}

StoredItem git_entry_item(const std::string& entry, const ItemKey& key, Secret text) {
    proto::Json json = stored_object(text, entry);
    const proto::ScrubGuard guard(json);
    if (stored_string(json, "url", entry, ": not a git credential") != key.key)
        throw Error(ErrorCode::keyring_error, entry + " holds the credentials of another URL");
    json.erase("url");
    std::string secret = json.dump();
    const std::optional<proto::GitItemKey> parsed = proto::parse_git_item_key(key.key);
    return {
        {ItemKind::git, key.key}, parsed ? parsed->username : std::string(), Secret::adopt(secret)};
}

// migrate compares the item's secret (compact JSON).
std::optional<Secret> git_copy_text(Keyring& k, const std::string& url) {
    const std::optional<GitCredential> found = GitItems(k).lookup(*proto::parse_git_item_key(url));
    if (!found) return std::nullopt;
    return git_secret_text(*found);
}

void git_copy(Keyring& k, const std::string& url, const Secret& text) {
    const proto::GitItemKey key = *proto::parse_git_item_key(url);
    GitItems(k).store(git_credential_of(key, url, text));
}

ItemKindDescription git() {
    return {
        .kind = ItemKind::git,
        .secret_service = {.schema_name = "io.hostkeeper.GitCredentials",
                           .schema_attributes = {"url", "protocol", "host", "path", "username"},
                           .key_attribute = "url",
                           .username_attribute = nullptr,
                           .label_prefix = "hostkeeper git: ",
                           .searching = "searching the keyring for the git credentials of ",
                           .looking = "searching the keyring for the git credentials of ",
                           .reading = "reading the git credentials for ",
                           .storing = "storing the git credentials for ",
                           .removing = "removing the git credentials for ",
                           .remove_searching = "removing the git credentials for ",
                           .listing = "listing the git credentials in the keyring",
                           .more_attributes = git_attributes,
                           .shown_key = git_label},
        .pass = {.folder = "git",
                 .encoded = true,
                 .writes_key =
                     [](std::string_view url) {
                         return proto::parse_git_item_key(url).has_value();
                     },
                 .too_long = "the git credential's URL (username, host and path) is too long for a "
                             "pass entry name (at most 188 bytes)",
                 .text_of = git_entry_text,
                 .item_of = git_entry_item,
                 .username_inside = false},
        .migration = {.what = "git item",
                      .many = "git items",
                      .reply_moved = "git_migrated",
                      .reply_failed = "url",
                      .list =
                          [](Keyring& k) {
                              std::vector<std::string> urls;
                              for (GitItemInfo& item : GitItems(k).items())
                                  urls.push_back(std::move(item.url));
                              return urls;
                          },
                      .read = git_copy_text,
                      .write = git_copy,
                      .remove =
                          [](Keyring& k, const std::string& url) {
                              return GitItems(k).remove(*proto::parse_git_item_key(url));
                          }},
    };
}

}  // namespace

std::span<const ItemKindDescription> item_kinds() {
    static const std::array<ItemKindDescription, 3> kinds{terraform(), docker(), git()};
    return kinds;
}

const ItemKindDescription& describe(ItemKind kind) {
    for (const ItemKindDescription& description : item_kinds())
        if (description.kind == kind) return description;
    throw Error(ErrorCode::keyring_error, "an item of an unknown kind");
}

}  // namespace hostkeeper::daemon::credentials
