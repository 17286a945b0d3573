#include "daemon/app/fleet_setup.hpp"

#include <spdlog/spdlog.h>

#include <exception>
#include <optional>
#include <string>
#include <utility>

#include "daemon/fleet/docker_config.hpp"
#include "daemon/fleet/fleet_address.hpp"

namespace hostkeeper::daemon::app {
namespace asio = boost::asio;

namespace {

// The keyring's Docker item for `host`; nullopt when there is none or the
// keyring cannot say (locked, absent).
asio::awaitable<std::optional<credentials::DockerCredentials>> stored_docker_item(
    credentials::KeyringItems& items, std::string host) {
    try {
        auto asking = items.docker_get(host);  // named first
        co_return co_await std::move(asking);
    } catch (const std::exception& e) {
        spdlog::debug("fleet tier: no Docker item for {} from the keyring: {}", host, e.what());
    }
    co_return std::nullopt;
}

// "USER:PASSWORD" for the fleet registry at `host`.
asio::awaitable<std::optional<proto::Secret>> fleet_credentials(credentials::KeyringItems& items,
                                                                std::string host) {
    auto asking = stored_docker_item(items, host);  // named first
    if (std::optional<credentials::DockerCredentials> stored = co_await std::move(asking)) {
        std::string joined = stored->username + ":";
        joined.append(stored->secret.view());
        co_return proto::Secret::adopt(joined);
    }
    std::string problem;
    std::optional<proto::Secret> configured = fleet::docker_config_auth(host, problem);
    if (!problem.empty()) spdlog::warn("fleet tier: not using {}", problem);
    co_return configured;
}

}  // namespace

std::unique_ptr<fleet::FleetTier> make_fleet_tier(const asio::any_io_executor& io,
                                                  http::HttpClient& http, const Config& config,
                                                  credentials::KeyringItems& items) {
    if (config.fleet.empty()) return nullptr;
    fleet::FleetOptions options;
    options.address = fleet::parse_fleet_address(config.fleet);  // checked when read
    options.push = config.fleet_push;
    options.modules = config.fleet_modules;
    fleet::CredentialLookup lookup = [&items, host = options.address.host] {
        return fleet_credentials(items, host);
    };
    spdlog::info("fleet tier: {} ({}{})", options.address.text(),
                 options.push ? "read and write" : "read only",
                 options.modules ? "" : ", provider packages only");
    return std::make_unique<fleet::FleetTier>(io, http, std::move(options), std::move(lookup));
}

}  // namespace hostkeeper::daemon::app
