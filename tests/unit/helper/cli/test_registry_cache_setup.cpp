// setup's side of the registry cache: registry-cache.json (no secret
// written; an older file's capability read and ignored), and what setup
// prints from a registry_cache_sync answer (against a one-shot fake
// hostkeeperd that answers as the design contract says).
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include <catch2/catch.hpp>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <optional>
#include <thread>

#include "fake_daemon.hpp"
#include "helper/cli/registry_cache_setup.hpp"
#include "proto/framing.hpp"
#include "proto/messages.hpp"
#include "proto/registry_cache_file.hpp"
#include "registry_cache_status.hpp"

namespace test_registry_cache_setup {

namespace cli = hostkeeper::helper::cli;
namespace proto = hostkeeper::proto;
using proto::Json;
namespace fs = std::filesystem;
using hk_unit::capture;
using hk_unit::Captured;
using hk_unit::contract_cache;
using hk_unit::FakeDaemon;
using hk_unit::private_socket;

namespace {

// XDG_CONFIG_HOME pointed at a private directory while it lives.
struct ConfigHome {
    ConfigHome() {
        std::string pattern = (fs::temp_directory_path() / "hk-cli-cache-XXXXXX").string();
        dir = ::mkdtemp(pattern.data());
        if (const char* old = std::getenv("XDG_CONFIG_HOME")) saved = old;
        ::setenv("XDG_CONFIG_HOME", dir.c_str(), 1);
        fs::create_directories(dir / "hostkeeper");
    }
    ~ConfigHome() {
        if (saved)
            ::setenv("XDG_CONFIG_HOME", saved->c_str(), 1);
        else
            ::unsetenv("XDG_CONFIG_HOME");
        fs::remove_all(dir);
    }
    ConfigHome(const ConfigHome&) = delete;
    ConfigHome& operator=(const ConfigHome&) = delete;
    void write(const std::string& text) const {
        std::FILE* file = std::fopen((dir / "hostkeeper" / "registry-cache.json").c_str(), "w");
        REQUIRE(file != nullptr);
        std::fputs(text.c_str(), file);
        std::fclose(file);
    }
    fs::path dir;
    std::optional<std::string> saved;
};

}  // namespace

TEST_CASE("registry-cache.json holds no secret; an older file's capability is ignored",
          "[cli][registry_cache]") {
    cli::RegistryCacheConfig config;
    config.tfrc_files = {"/home/u/.terraform.d/hostkeeper.tfrc"};
    config.hosts = {"a.example"};
    const Json written = proto::parse_json(proto::registry_cache_file_text(config));
    CHECK(written == Json{{"version", 1},
                          {"tfrc_files", Json::array({"/home/u/.terraform.d/hostkeeper.tfrc"})},
                          {"hosts", Json::array({"a.example"})}});

    const ConfigHome home;
    home.write(written.dump());
    std::optional<cli::RegistryCacheConfig> read = cli::read_registry_cache_config();
    REQUIRE(read);
    CHECK_FALSE(read->old_capability);
    CHECK(read->hosts == config.hosts);

    // What older setups wrote: a port of their own and the URLs' capability.
    home.write(R"({"version":1,"listen":"127.0.0.1:47123",)"
               R"("capability":"AbCdEfGhIjKlMnOpQrStUvWxYz0123456789-_AbCdE",)"
               R"("tfrc_files":["/home/u/.terraform.d/hostkeeper.tfrc"],"hosts":["a.example"]})");
    read = cli::read_registry_cache_config();
    REQUIRE(read);
    CHECK(read->old_capability);
    CHECK(read->tfrc_files == config.tfrc_files);
    // Written again, it has none.
    CHECK_THAT(proto::registry_cache_file_text(*read), !Catch::Contains("capability"));

    home.write(R"({"version":1,"capability":42,"tfrc_files":[],"hosts":[]})");
    CHECK_THROWS_WITH(cli::read_registry_cache_config(),
                      Catch::Contains("\"capability\" must be a string"));
}

TEST_CASE("setup asks registry_cache_sync for the named hosts and reports each",
          "[cli][registry_cache]") {
    const fs::path socket = private_socket();
    Json reply = proto::make_ok();
    reply["registry_cache"] = contract_cache();
    FakeDaemon daemon(socket, reply);
    hostkeeper::helper::client::ClientOptions options;
    options.socket = socket;
    options.start_daemon = false;
    options.timeout = std::chrono::seconds(5);
    const Captured c = capture([&] {
        return cli::sync_registry_cache(options, {"a.example", "Bücher.example"}, false);
    });
    const Json request = daemon.request();
    CHECK(request.value("op", "") == "registry_cache_sync");
    CHECK(request.at("hosts") == Json::array({"a.example", "xn--bcher-kva.example"}));
    CHECK(c.status == 0);
    CHECK_THAT(c.out,
               Catch::Contains("registry cache: hostkeeperd is registered with hostkeeper-portd "
                               "for the registry port 127.0.0.1:585"));
    CHECK_THAT(c.out, Catch::Contains("registry cache: a.example: routed through the cache "
                                      "(modules.v1, providers.v1)"));
    CHECK_THAT(c.out, Catch::Contains("registry cache: xn--bcher-kva.example: not routed: "
                                      "discovery failed: no such host"));
    CHECK_THAT(c.out, !Catch::Contains("learned.example"));  // not named
    fs::remove_all(socket.parent_path());
}

TEST_CASE("setup says when hostkeeperd is not registered for the port, or does not know the op",
          "[cli][registry_cache]") {
    hostkeeper::helper::client::ClientOptions options;
    options.start_daemon = false;
    options.timeout = std::chrono::seconds(5);
    {
        options.socket = private_socket();
        Json cache = contract_cache();
        cache["held"] = false;
        cache["error"] = "/run/hostkeeper/port.sock is not root's";
        Json reply = proto::make_ok();
        reply["registry_cache"] = cache;
        FakeDaemon daemon(*options.socket, reply);
        const Captured c = capture([&] { return cli::sync_registry_cache(options, {}, false); });
        CHECK(c.status == 1);
        CHECK_THAT(c.err, Catch::Contains("hostkeeperd is not registered for the registry port: "
                                          "/run/hostkeeper/port.sock is not root's"));
        CHECK_THAT(c.out, Catch::Contains("learned.example: routed"));  // no hosts named: all
        CHECK_FALSE(daemon.request().contains("hosts"));
        fs::remove_all(options.socket->parent_path());
    }
    {
        options.socket = private_socket();
        Json reply = proto::make_ok();
        reply["registry_cache"] = Json{{"enabled", false}, {"listen", nullptr}, {"held", false}};
        FakeDaemon daemon(*options.socket, reply);
        const Captured c = capture([&] { return cli::sync_registry_cache(options, {}, false); });
        CHECK(c.status == 1);
        CHECK_THAT(c.err, Catch::Contains("the running hostkeeperd has the registry cache off"));
        CHECK_THAT(c.err, Catch::Contains("run 'hostkeeper stop', then this again"));
        fs::remove_all(options.socket->parent_path());
    }
    {
        options.socket = private_socket();
        FakeDaemon daemon(*options.socket, proto::make_error(proto::ErrorCode::unknown_op,
                                                             "unknown op \"registry_cache_sync\""));
        const Captured c = capture([&] { return cli::sync_registry_cache(options, {}, false); });
        CHECK(c.status == 1);
        CHECK_THAT(c.err, Catch::Contains("does not know the registry cache"));
        CHECK_THAT(c.err, Catch::Contains("hostkeeper stop"));
        fs::remove_all(options.socket->parent_path());
    }
}

}  // namespace test_registry_cache_setup
