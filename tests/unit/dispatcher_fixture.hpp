#pragma once
// The dispatcher and every request handler behind a real socket, with an
// in-memory keyring and a scripted HTTP client: what the handlers' unit
// tests talk to.

#include <unistd.h>

#include <atomic>
#include <boost/asio/thread_pool.hpp>
#include <chrono>
#include <filesystem>
#include <optional>
#include <string>

#include "daemon/archives/archive_store.hpp"
#include "daemon/credentials/command_tokens.hpp"
#include "daemon/credentials/credential_service.hpp"
#include "daemon/credentials/keyring_items.hpp"
#include "daemon/discovery/discovery_service.hpp"
#include "daemon/handlers/dispatcher.hpp"
#include "daemon/registry/registry_service.hpp"
#include "daemon/registry_cache/registry_cache.hpp"
#include "fake_http_client.hpp"
#include "fake_keyring_admin.hpp"
#include "memory_keyring.hpp"
#include "server_fixture.hpp"

namespace hostkeeper::test {
namespace asio = boost::asio;
using namespace std::chrono_literals;

struct DispatcherFixture : SocketServer {
    DispatcherFixture() {
        credentials.tokens().use_token_commands(commands);
        serve(dispatcher, {1, 1s, 1s, 0s});
    }
    ~DispatcherFixture() {
        shutdown();
        pool.join();
        std::error_code ignored;
        std::filesystem::remove_all(archive_dir, ignored);
    }

    asio::thread_pool pool{1};
    MemoryKeyring keyring{"secret-service"};
    MemoryKeyring other_keyring{"pass"};
    FakeKeyringAdmin keyring_admin{keyring, other_keyring};
    daemon::credentials::CredentialService credentials{
        io.get_executor(), pool.get_executor(), keyring, {}};
    FakeHttpClient http{io.get_executor()};
    daemon::discovery::DiscoveryService discovery{
        io.get_executor(), http, credentials.tokens(), {}};
    // The registry's clock: now, or `frozen` once a test sets it (before its
    // first request), so that the ages in its answers stay put.
    std::optional<std::chrono::steady_clock::time_point> frozen;
    std::chrono::steady_clock::time_point registry_now() const {
        return frozen.value_or(std::chrono::steady_clock::now());
    }
    daemon::registry::RegistryService registry{
        io.get_executor(), http, credentials.tokens(),
        discovery,         {},   [this] { return registry_now(); }};
    // The registry cache is off here (no configuration): the store is never used.
    std::filesystem::path archive_dir =
        std::filesystem::temp_directory_path() / ("hk-dispatcher-" + std::to_string(::getpid()));
    daemon::archives::ArchiveStore archives{io.get_executor(), http, {archive_dir}};
    daemon::registry_cache::RegistryCache cache{io.get_executor(),
                                                std::nullopt,
                                                archive_dir / "state.json",
                                                archive_dir / "documents",
                                                credentials.tokens(),
                                                discovery,
                                                registry,
                                                archives};
    // config.toml's [hosts."ecr.example"] token_command, token_username = "AWS",
    // and [hosts."bare.example"] token_command without a token_username:
    // each prints "cmd-token-N", N counting the runs.
    std::atomic<int> command_runs{0};
    daemon::credentials::CommandTokens commands{
        io.get_executor(), pool.get_executor(), token_commands(),
        [this](const daemon::credentials::TokenCommand&) {
            daemon::credentials::CommandRun run;
            run.exit_code = 0;
            run.output = proto::Secret("cmd-token-" + std::to_string(++command_runs) + "\n");
            return run;
        }};
    static daemon::credentials::TokenCommandOptions token_commands() {
        daemon::credentials::TokenCommandOptions options;
        options.hosts["ecr.example"] = {{"/bin/tok"}, 100s, 5s, {}, "AWS"};
        options.hosts["bare.example"] = {{"/bin/tok"}, 100s, 5s, {}, {}};
        return options;
    }
    // config.toml's [hosts."custom.example"] git_username = "deploy".
    daemon::credentials::KeyringItems items{
        pool.get_executor(), keyring, credentials, {{"custom.example", "deploy"}}};
    daemon::handlers::Dispatcher dispatcher{credentials,
                                            items,
                                            discovery,
                                            registry,
                                            cache,
                                            keyring_admin,
                                            daemon::handlers::DaemonInfo{"test", false, 0s}};
};

}  // namespace hostkeeper::test
