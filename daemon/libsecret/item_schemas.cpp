#include "daemon/libsecret/item_schemas.hpp"

#include <initializer_list>
#include <optional>

#include "proto/error.hpp"
#include "proto/git_credential.hpp"

namespace hostkeeper::daemon::libsecret {

namespace {

SecretSchema make_schema(const char* name, std::initializer_list<const char*> attributes) {
    SecretSchema s{};
    s.name = name;
    s.flags = SECRET_SCHEMA_NONE;
    int i = 0;
    for (const char* attribute : attributes) {
        s.attributes[i].name = attribute;
        s.attributes[i].type = SECRET_SCHEMA_ATTRIBUTE_STRING;
        ++i;
    }
    return s;
}

std::vector<std::pair<const char*, std::string>> git_attributes(const std::string& key) {
    const std::optional<proto::GitItemKey> parsed = proto::parse_git_item_key(key);
    if (!parsed) throw proto::Error(proto::ErrorCode::keyring_error, "not a git item's URL");
    return {{"protocol", std::string(proto::kGitProtocol)},
            {"host", parsed->host},
            {"path", parsed->path},
            {"username", parsed->username}};
}

std::string git_label(const std::string& key) {
    const std::optional<proto::GitItemKey> parsed = proto::parse_git_item_key(key);
    return parsed ? proto::git_item_url(*parsed) : key;
}

}  // namespace

const ItemSchema& item_schema(credentials::ItemKind kind) {
    static const SecretSchema terraform_schema = make_schema("io.hostkeeper.Credentials", {"host"});
    static const SecretSchema docker_schema =
        make_schema("io.hostkeeper.DockerCredentials", {"server", "username"});
    static const SecretSchema git_schema = make_schema(
        "io.hostkeeper.GitCredentials", {"url", "protocol", "host", "path", "username"});
    static const ItemSchema terraform{
        &terraform_schema,
        "host",
        nullptr,
        "hostkeeper: ",
        "searching the keyring for ",
        "reading the credentials for ",
        "reading the credentials for ",
        "storing the credentials for ",
        "removing the credentials for ",
        "searching the keyring for ",
        "listing hostkeeper's items in the keyring",
        nullptr,
        nullptr,
    };
    static const ItemSchema docker{
        &docker_schema,
        "server",
        "username",
        "hostkeeper docker: ",
        "searching the keyring for the Docker credentials of ",
        "searching the keyring for the Docker credentials of ",
        "reading the Docker credentials for ",
        "storing the Docker credentials for ",
        "removing the Docker credentials for ",
        "removing the Docker credentials for ",
        "listing the Docker credentials in the keyring",
        nullptr,
        nullptr,
    };
    static const ItemSchema git{
        &git_schema,
        "url",
        nullptr,
        "hostkeeper git: ",
        "searching the keyring for the git credentials of ",
        "searching the keyring for the git credentials of ",
        "reading the git credentials for ",
        "storing the git credentials for ",
        "removing the git credentials for ",
        "removing the git credentials for ",
        "listing the git credentials in the keyring",
        git_attributes,
        git_label,
    };
    switch (kind) {
        case credentials::ItemKind::terraform:
            return terraform;
        case credentials::ItemKind::docker:
            return docker;
        case credentials::ItemKind::git:
            return git;
    }
    throw proto::Error(proto::ErrorCode::keyring_error, "an item of an unknown kind");
}

}  // namespace hostkeeper::daemon::libsecret
