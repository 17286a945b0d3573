#include "daemon/app/fleet_setup.hpp"

#include <spdlog/spdlog.h>

#include <chrono>
#include <exception>
#include <filesystem>
#include <optional>
#include <string>
#include <utility>

#include "daemon/credentials/file_trust.hpp"
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

// How long a Docker credential helper may take to answer.
constexpr std::chrono::seconds kHelperTimeout{30};

// Docker's client configuration; said and nothing when it cannot be read.
std::optional<std::string> docker_config_text() {
    try {
        return fleet::read_docker_config();
    } catch (const std::exception& e) {
        spdlog::warn("fleet tier: not using {}", e.what());
    }
    return std::nullopt;
}

// Whether the configuration may name a program this daemon runs: not when
// another user could change it (said).
bool may_run_helper(const std::string& helper) {
    const std::filesystem::path path = fleet::docker_config_path();
    const std::string why = credentials::untrusted_path(path, credentials::FileOwner::you);
    if (why.empty()) return true;
    spdlog::warn("fleet tier: docker-credential-{} not run, named by {}: {}", helper, path.string(),
                 why);
    return false;
}

// What of `text` applies to `host`: the credential helper it names, or its
// auths (`helper` empty then); said and nothing when it does not read.
std::optional<proto::Secret> configured_auth(const std::string& text, const std::string& host,
                                             std::string& helper) {
    try {
        helper = fleet::docker_helper(text, host).value_or("");
        // The keyring's own items were asked first.
        if (helper == "hostkeeper") helper.clear();
        if (!helper.empty()) return std::nullopt;
        return fleet::docker_auth(text, host);
    } catch (const std::exception& e) {
        spdlog::warn("fleet tier: not using {}: {}", fleet::docker_config_path().string(),
                     e.what());
    }
    helper.clear();
    return std::nullopt;
}

// The credential helper's answer for `host`; said and nothing when it failed.
std::optional<proto::Secret> helper_answer(const credentials::TokenCommand& command,
                                           credentials::CommandRun& run, const std::string& host) {
    if (!run.launch_error.empty() || run.timed_out || run.too_much_output || run.exit_code != 0) {
        spdlog::warn("fleet tier: {}", credentials::command_failure(host, command, run));
        return std::nullopt;
    }
    try {
        return fleet::helper_credentials(run.output.view());
    } catch (const std::exception& e) {
        spdlog::warn("fleet tier: {} for {}: {}", command.argv.front(), host, e.what());
    }
    return std::nullopt;
}

// `docker-credential-HELPER get`, asked for `host`.
asio::awaitable<std::optional<proto::Secret>> from_helper(credentials::CommandTokens& commands,
                                                          std::string helper, std::string host) {
    credentials::TokenCommand command;
    command.argv = {"docker-credential-" + helper, "get"};
    command.timeout = kHelperTimeout;
    command.input = host;
    auto running = commands.run_once(command);  // named first
    credentials::CommandRun run = co_await std::move(running);
    co_return helper_answer(command, run, host);
}

// "USER:PASSWORD" for the fleet registry at `host`.
asio::awaitable<std::optional<proto::Secret>> fleet_credentials(
    credentials::KeyringItems& items, credentials::CommandTokens& commands, std::string host) {
    auto asking = stored_docker_item(items, host);  // named first
    if (std::optional<credentials::DockerCredentials> stored = co_await std::move(asking)) {
        std::string joined = stored->username + ":";
        joined.append(stored->secret.view());
        co_return proto::Secret::adopt(joined);
    }
    std::optional<std::string> text = docker_config_text();
    if (!text) co_return std::nullopt;
    std::string helper;
    std::optional<proto::Secret> configured = configured_auth(*text, host, helper);
    proto::scrub(*text);
    if (helper.empty()) co_return configured;
    if (!may_run_helper(helper)) co_return std::nullopt;
    auto helping = from_helper(commands, std::move(helper), std::move(host));  // named first
    co_return co_await std::move(helping);
}

}  // namespace

std::unique_ptr<fleet::FleetTier> make_fleet_tier(const asio::any_io_executor& io,
                                                  http::HttpClient& http, const Config& config,
                                                  credentials::KeyringItems& items,
                                                  credentials::CommandTokens& commands) {
    if (config.fleet.empty()) return nullptr;
    fleet::FleetOptions options;
    options.address = fleet::parse_fleet_address(config.fleet);  // checked when read
    options.push = config.fleet_push;
    options.modules = config.fleet_modules;
    fleet::CredentialLookup lookup = [&items, &commands, host = options.address.host] {
        return fleet_credentials(items, commands, host);
    };
    spdlog::info("fleet tier: {} ({}{})", options.address.text(),
                 options.push ? "read and write" : "read only",
                 options.modules ? "" : ", provider packages only");
    return std::make_unique<fleet::FleetTier>(io, http, std::move(options), std::move(lookup));
}

}  // namespace hostkeeper::daemon::app
