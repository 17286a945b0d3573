#pragma once
// The fleet tier of registry_cache.fleet, when it is set, and where its
// registry's credentials come from: what docker-credential-hostkeeper
// answers for its host (the keyring's Docker item, else the host's
// token_command token as the password of its token_username:
// credentials/docker_answers.hpp), else Docker's client configuration
// (fleet/docker_config.hpp): the credential helper it names for the host,
// run as token commands are (credentials/command_tokens.hpp), else its
// auths. Each is asked again whenever the registry refuses what was sent;
// a source that fails says why, which the tier's refusal then carries.

#include <boost/asio/any_io_executor.hpp>
#include <memory>

#include "daemon/app/config.hpp"
#include "daemon/credentials/command_tokens.hpp"
#include "daemon/credentials/keyring_items.hpp"
#include "daemon/fleet/fleet_tier.hpp"
#include "daemon/http/http_client.hpp"

namespace hostkeeper::daemon::app {

// nullptr when registry_cache.fleet is not set.
std::unique_ptr<fleet::FleetTier> make_fleet_tier(const boost::asio::any_io_executor& io,
                                                  http::HttpClient& http, const Config& config,
                                                  credentials::KeyringItems& items,
                                                  credentials::CommandTokens& commands);

}  // namespace hostkeeper::daemon::app
