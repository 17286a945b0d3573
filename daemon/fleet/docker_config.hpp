#pragma once
// The fleet registry's credentials as Docker's client keeps them: the
// `auths` of $DOCKER_CONFIG/config.json (else ~/.docker/config.json), the
// entry for the registry's host (as `docker login HOST` writes it, or with
// an https:// in front): `auth` (base64 of "USER:PASSWORD") or `username`
// and `password`; or, as Docker does, the credential helper it names for
// the host (`credHelpers`, else `credsStore`): the program
// docker-credential-NAME, asked `get` with the host on its standard input,
// answers {"ServerURL","Username","Secret"}. An identity token (Username
// "<token>") is not used: it is no registry password.

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

// The text of the file at docker_config_path(); nullopt when there is none.
// Throws std::runtime_error (naming the file) when it cannot be read.
std::optional<std::string> read_docker_config();

// The name of the credential helper the configuration `text` names for
// `host` (credHelpers' entry for it, else credsStore); nullopt for none.
// Throws std::runtime_error when the text is not such a configuration or
// the name is not one a program's name can end with ([A-Za-z0-9._-]).
std::optional<std::string> docker_helper(std::string_view text, const std::string& host);

// "USER:SECRET" from a credential helper's answer to `get`. Throws
// std::runtime_error (its message never quotes a secret) for an answer
// that is not {"Username","Secret"} strings, or an identity token.
proto::Secret helper_credentials(std::string_view answer);

}  // namespace hostkeeper::daemon::fleet
