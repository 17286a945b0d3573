#pragma once
// The fleet registry's credentials as Docker's client keeps them: the
// `auths` of $DOCKER_CONFIG/config.json (else ~/.docker/config.json), the
// entry for the registry's host (as `docker login HOST` writes it, or with
// an https:// in front): `auth` (base64 of "USER:PASSWORD") or `username`
// and `password`. Entries that name a credential helper (credsStore,
// credHelpers) or hold an identity token are not read: the keyring's Docker
// items (docker-credential-hostkeeper) serve those users.

#include <filesystem>
#include <optional>
#include <string>
#include <string_view>

#include "proto/secret.hpp"

namespace hostkeeper::daemon::fleet {

// Where Docker's client configuration is: $DOCKER_CONFIG/config.json, else
// $HOME/.docker/config.json.
std::filesystem::path docker_config_path();

// "USER:PASSWORD" for `host` in the configuration `text`; nullopt when it
// has none. Throws std::runtime_error (its message never quotes a secret)
// when the text is not such a configuration.
std::optional<proto::Secret> docker_auth(std::string_view text, const std::string& host);

// docker_auth() of the file at docker_config_path(); nullopt when there is
// no file or no entry. `problem` says why a file could not be used ("" else).
std::optional<proto::Secret> docker_config_auth(const std::string& host, std::string& problem);

}  // namespace hostkeeper::daemon::fleet
