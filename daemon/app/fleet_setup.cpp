#include "daemon/app/fleet_setup.hpp"

#include <spdlog/spdlog.h>

#include <chrono>
#include <exception>
#include <filesystem>
#include <optional>
#include <string>
#include <utility>

#include "daemon/credentials/docker_answers.hpp"
#include "daemon/credentials/file_trust.hpp"
#include "daemon/fleet/docker_config.hpp"
#include "daemon/fleet/fleet_address.hpp"
#include "proto/error.hpp"

namespace hostkeeper::daemon::app {
namespace asio = boost::asio;

namespace {

// How long a Docker credential helper may take to answer.
constexpr std::chrono::seconds kHelperTimeout{30};

// Nothing, and why.
fleet::FleetCredentials none_because(std::string why) {
    fleet::FleetCredentials out;
    out.why_none = std::move(why);
    return out;
}

fleet::FleetCredentials found(proto::Secret user_password) {
    fleet::FleetCredentials out;
    out.user_password = std::move(user_password);
    return out;
}

// What Docker's client configuration gives for `host`: its auths, or the
// credential helper it names (`helper`, "" when it names none or ours, whose
// keyring items were asked first).
fleet::FleetCredentials configured_auth(const std::string& host, std::string& helper) {
    std::string text;
    try {
        std::optional<std::string> read = fleet::read_docker_config();
        if (!read) return {};
        text = std::move(*read);
        helper = fleet::docker_helper(text, host).value_or("");
        if (helper == "hostkeeper") helper.clear();
        std::optional<proto::Secret> auth;
        if (helper.empty()) auth = fleet::docker_auth(text, host);
        proto::scrub(text);
        if (auth) return found(std::move(*auth));
        return {};
    } catch (const std::exception& e) {
        proto::scrub(text);
        helper.clear();
        return none_because("not using " + fleet::docker_config_path().string() + ": " + e.what());
    }
}

// `docker-credential-HELPER get`, asked for `host`; not run when the
// configuration naming it is one another user could change.
asio::awaitable<fleet::FleetCredentials> from_helper(credentials::CommandTokens& commands,
                                                     std::string helper, std::string host) {
    const std::filesystem::path config = fleet::docker_config_path();
    const std::string why = credentials::untrusted_path(config, credentials::FileOwner::you);
    if (!why.empty())
        co_return none_because("docker-credential-" + helper + " not run, named by " +
                               config.string() + ": " + why);
    credentials::TokenCommand command;
    command.argv = {"docker-credential-" + helper, "get"};
    command.timeout = kHelperTimeout;
    command.input = host;
    auto running = commands.run_once(command);  // named first
    credentials::CommandRun run = co_await std::move(running);
    if (!run.launch_error.empty() || run.timed_out || run.too_much_output || run.exit_code != 0)
        co_return none_because(
            credentials::program_failure(command.argv.front() + " get for " + host, command, run));
    try {
        co_return found(fleet::helper_credentials(run.output.view()));
    } catch (const std::exception& e) {
        co_return none_because(command.argv.front() + ": " + e.what());
    }
}

// "USER:PASSWORD" for the fleet registry at `host`, from the first source
// that has it (fleet_setup.hpp): what the Docker credential helper answers
// (docker_answers.hpp), else Docker's client configuration.
asio::awaitable<fleet::FleetCredentials> fleet_credentials(credentials::KeyringItems& items,
                                                           credentials::CommandTokens& commands,
                                                           std::string host) {
    try {
        auto asking = credentials::docker_credentials(items, &commands, host);  // named first
        if (std::optional<credentials::DockerCredentials> got = co_await std::move(asking)) {
            std::string joined = got->username + ":";
            joined.append(got->secret.view());
            co_return found(proto::Secret::adopt(joined));
        }
    } catch (const std::exception& e) {
        // The command answers for the host and failed: no other source is asked.
        const auto* error = dynamic_cast<const proto::Error*>(&e);
        if (error != nullptr && error->code() == proto::ErrorCode::token_command_failed)
            co_return none_because(e.what());
        spdlog::debug("fleet tier: no Docker item for {} from the keyring: {}", host, e.what());
    }
    if (commands.has(host) && commands.username(host).empty())
        co_return none_because("token_command for " + host +
                               " is not used without a token_username beside it (the user name "
                               "the registry expects with the token)");
    std::string helper;
    fleet::FleetCredentials configured = configured_auth(host, helper);
    if (helper.empty()) co_return configured;
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
