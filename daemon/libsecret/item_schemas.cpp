#include "daemon/libsecret/item_schemas.hpp"

#include <initializer_list>

#include "proto/error.hpp"

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

}  // namespace

const ItemSchema& item_schema(credentials::ItemKind kind) {
    static const SecretSchema terraform_schema = make_schema("io.hostkeeper.Credentials", {"host"});
    static const SecretSchema docker_schema =
        make_schema("io.hostkeeper.DockerCredentials", {"server", "username"});
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
    };
    switch (kind) {
        case credentials::ItemKind::terraform:
            return terraform;
        case credentials::ItemKind::docker:
            return docker;
    }
    throw proto::Error(proto::ErrorCode::keyring_error, "an item of an unknown kind");
}

}  // namespace hostkeeper::daemon::libsecret
