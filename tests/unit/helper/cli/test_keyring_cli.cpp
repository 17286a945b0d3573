// hostkeeper status's keyring lines, and hostkeeper migrate and unlock
// against a stand-in hostkeeperd that answers as the design contract says:
// the request sent, what is printed, the exit status, config.toml.
#include <catch2/catch.hpp>
#include <cstdlib>
#include <filesystem>

#include "fake_daemon.hpp"
#include "helper/cli/keyring_cli.hpp"
#include "proto/file_io.hpp"
#include "proto/messages.hpp"

namespace test_keyring_cli {

namespace cli = hostkeeper::helper::cli;
namespace proto = hostkeeper::proto;
using hk_unit::capture;
using hk_unit::Captured;
using hk_unit::FakeDaemon;
using proto::Json;
namespace fs = std::filesystem;

namespace {

// XDG_CONFIG_HOME pointed at a fresh directory for one test.
struct ConfigHome {
    fs::path dir;
    std::string saved;
    bool had = false;
    explicit ConfigHome(const fs::path& under) : dir(under / "config") {
        if (const char* v = std::getenv("XDG_CONFIG_HOME")) {
            had = true;
            saved = v;
        }
        ::setenv("XDG_CONFIG_HOME", dir.c_str(), 1);
    }
    ~ConfigHome() {
        if (had) {
            ::setenv("XDG_CONFIG_HOME", saved.c_str(), 1);
        } else {
            ::unsetenv("XDG_CONFIG_HOME");
        }
    }
    ConfigHome(const ConfigHome&) = delete;
    ConfigHome& operator=(const ConfigHome&) = delete;
    fs::path file() const { return dir / "hostkeeper" / "config.toml"; }
};

Json migrate_reply(Json migrated, Json failed, bool switched) {
    Json reply = proto::make_ok();
    reply["from"] = "secret-service";
    reply["to"] = "pass";
    reply["migrated"] = std::move(migrated);
    reply["failed"] = std::move(failed);
    reply["switched"] = switched;
    return reply;
}

}  // namespace

TEST_CASE("status: the keyring backend, why, the store, and what auto tried", "[cli][keyring]") {
    const Json pass{
        {"backend", "pass"},
        {"configured", "auto"},
        {"reason", "no Secret Service answers; the password store is initialized"},
        {"store", "/home/u/.password-store"},
        {"store_writable", false},
        {"tried",
         Json::array(
             {Json{{"backend", "secret-service"}, {"usable", false}, {"detail", "no session bus"}},
              Json{{"backend", "pass"}, {"usable", true}, {"detail", "ok"}}})}};
    CHECK(cli::keyring_status_lines(pass) ==
          std::vector<std::string>{
              "keyring backend: pass (configured: auto): no Secret Service answers; the "
              "password store is initialized",
              "password store: /home/u/.password-store (NOT writable)",
              "  tried secret-service: not usable: no session bus", "  tried pass: usable: ok"});
    Json chosen = pass;
    chosen["configured"] = "pass";
    chosen["store_writable"] = true;
    CHECK(cli::keyring_status_lines(chosen) ==
          std::vector<std::string>{"keyring backend: pass (configured: pass): no Secret Service "
                                   "answers; the password store is initialized",
                                   "password store: /home/u/.password-store (writable)"});
    CHECK(cli::keyring_status_lines(Json{{"backend", nullptr},
                                         {"configured", "auto"},
                                         {"reason", "neither works"},
                                         {"tried", Json::array()}}) ==
          std::vector<std::string>{"keyring backend: none (configured: auto): neither works"});
}

TEST_CASE("migrate: every host moved: exit 0, and config.toml says the new backend",
          "[cli][keyring]") {
    auto options = hk_unit::fake_client_options();
    const ConfigHome config(options.socket->parent_path());
    FakeDaemon daemon(*options.socket, migrate_reply(Json::array({"a.example", "b.example:8443"}),
                                                     Json::array(), true));
    const Captured c = capture([&] { return cli::run_migrate(options, "pass"); });
    CHECK(c.status == 0);
    const Json request = daemon.request();
    CHECK(request.value("op", "") == "migrate");
    CHECK(request.value("to", "") == "pass");
    CHECK_THAT(c.out, Catch::Contains("moved    a.example\nmoved    b.example:8443\n"));
    CHECK_THAT(c.out, Catch::Contains("2 item(s) moved from secret-service to pass\n"));
    CHECK_THAT(c.out, Catch::Contains("hostkeeperd now uses pass; wrote backend = \"pass\" under "
                                      "[keyring] in " +
                                      config.file().string()));
    CHECK(proto::read_file_if_exists(config.file()) == "[keyring]\nbackend = \"pass\"\n");
    fs::remove_all(options.socket->parent_path());
}

TEST_CASE(
    "migrate: a host failed: nothing moved, exit 1, each failure printed, config.toml "
    "untouched",
    "[cli][keyring]") {
    auto options = hk_unit::fake_client_options();
    const ConfigHome config(options.socket->parent_path());
    FakeDaemon daemon(*options.socket,
                      migrate_reply(Json::array(),
                                    Json::array({Json{{"host", "b.example"},
                                                      {"code", "keyring_error"},
                                                      {"message", "no public key for DEADBEEF"}}}),
                                    false));
    const Captured c = capture([&] { return cli::run_migrate(options, "pass"); });
    CHECK(c.status == 1);
    CHECK_THAT(c.out,
               Catch::Contains("FAILED   b.example: no public key for DEADBEEF (keyring_error)\n"));
    CHECK_THAT(c.out, Catch::Contains("nothing moved: 1 item(s) failed, so every copy was taken "
                                      "back out of pass; hostkeeperd still uses secret-service"));
    CHECK_FALSE(c.out.find("moved    ") != std::string::npos);
    CHECK_FALSE(fs::exists(config.file()));
    fs::remove_all(options.socket->parent_path());
}

TEST_CASE("migrate: git items are printed by URL, moved or failed", "[cli][keyring][git]") {
    auto options = hk_unit::fake_client_options();
    const ConfigHome config(options.socket->parent_path());
    {
        Json reply = migrate_reply(Json::array({"a.example"}), Json::array(), true);
        reply["git_migrated"] = Json::array({"https://alice@git.example/r.git"});
        FakeDaemon daemon(*options.socket, reply);
        const Captured c = capture([&] { return cli::run_migrate(options, "pass"); });
        CHECK(c.status == 0);
        CHECK_THAT(c.out, Catch::Contains("moved    a.example\n"
                                          "moved    git https://alice@git.example/r.git\n"
                                          "2 item(s) moved from secret-service to pass\n"));
    }
    fs::remove(*options.socket);
    {
        FakeDaemon daemon(*options.socket,
                          migrate_reply(Json::array(),
                                        Json::array({Json{{"url", "https://bob@git.example"},
                                                          {"code", "bad_request"},
                                                          {"message", "too long"}}}),
                                        false));
        const Captured c = capture([&] { return cli::run_migrate(options, "pass"); });
        CHECK(c.status == 1);
        CHECK_THAT(c.out, Catch::Contains(
                              "FAILED   git https://bob@git.example: too long (bad_request)\n"));
    }
    fs::remove_all(options.socket->parent_path());
}

TEST_CASE(
    "migrate: moved, but one host could not be removed from the source: exit 1, LEFT "
    "names it, config.toml written",
    "[cli][keyring]") {
    auto options = hk_unit::fake_client_options();
    const ConfigHome config(options.socket->parent_path());
    Json reply = migrate_reply(Json::array({"a.example"}), Json::array(), true);
    reply["leftover"] = Json::array(
        {Json{{"host", "a.example"}, {"code", "keyring_locked"}, {"message", "locked"}}});
    FakeDaemon daemon(*options.socket, reply);
    const Captured c = capture([&] { return cli::run_migrate(options, "pass"); });
    CHECK(c.status == 1);
    CHECK_THAT(c.out, Catch::Contains("LEFT     a.example: moved, but it could not be removed from "
                                      "secret-service: locked (keyring_locked)"));
    CHECK(proto::read_file_if_exists(config.file()) == "[keyring]\nbackend = \"pass\"\n");
    fs::remove_all(options.socket->parent_path());
}

TEST_CASE("migrate: the daemon refuses: exit 1, the reason, nothing written", "[cli][keyring]") {
    for (const auto code : {proto::ErrorCode::bad_request, proto::ErrorCode::keyring_unavailable}) {
        auto options = hk_unit::fake_client_options();
        const ConfigHome config(options.socket->parent_path());
        FakeDaemon daemon(*options.socket, proto::make_error(code, "pass is already in use"));
        const Captured c = capture([&] { return cli::run_migrate(options, "pass"); });
        CHECK(c.status == 1);
        CHECK_THAT(c.err, Catch::Contains("hostkeeperd refused: pass is already in use"));
        CHECK_FALSE(fs::exists(config.file()));
        fs::remove_all(options.socket->parent_path());
    }
}

TEST_CASE("migrate: switched but config.toml cannot be written: exit 1, says what to add",
          "[cli][keyring]") {
    auto options = hk_unit::fake_client_options();
    const ConfigHome config(options.socket->parent_path());
    fs::create_directories(config.file());  // a directory where the file belongs
    FakeDaemon daemon(*options.socket,
                      migrate_reply(Json::array({"a.example"}), Json::array(), true));
    const Captured c = capture([&] { return cli::run_migrate(options, "pass"); });
    CHECK(c.status == 1);
    CHECK_THAT(c.err, Catch::Contains("add backend = \"pass\" under [keyring] there, or the next "
                                      "hostkeeperd uses secret-service again"));
    fs::remove_all(options.socket->parent_path());
}

TEST_CASE("unlock: the Secret Service: the unlock op after status", "[cli][keyring]") {
    auto options = hk_unit::fake_client_options();
    Json status = proto::make_ok();
    status["keyring"] = Json{{"backend", "secret-service"}, {"configured", "auto"}};
    FakeDaemon daemon(*options.socket, std::vector<Json>{status, proto::make_ok()});
    const Captured c = capture([&] { return cli::run_unlock(options); });
    CHECK(c.status == 0);
    REQUIRE(daemon.requests().size() == 2);
    CHECK(daemon.requests()[0].value("op", "") == "status");
    CHECK(daemon.requests()[1].value("op", "") == "unlock");
    CHECK_THAT(c.out, Catch::Contains("default collection is unlocked"));
    fs::remove_all(options.socket->parent_path());
}

TEST_CASE("unlock: pass with no entries and no .gpg-id names pass init, exit 1", "[cli][keyring]") {
    auto options = hk_unit::fake_client_options();
    const fs::path store = options.socket->parent_path() / "store";
    fs::create_directories(store);
    Json status = proto::make_ok();
    status["keyring"] = Json{{"backend", "pass"}, {"store", store.string()}};
    FakeDaemon daemon(*options.socket, status);
    const Captured c = capture([&] { return cli::run_unlock(options); });
    CHECK(c.status == 1);
    CHECK_THAT(c.err, Catch::Contains(store.string() + " has no .gpg-id: run pass init KEY-ID"));
    fs::remove_all(options.socket->parent_path());
}

TEST_CASE("unlock: no backend: the daemon's reason, exit 1", "[cli][keyring]") {
    auto options = hk_unit::fake_client_options();
    Json status = proto::make_ok();
    status["keyring"] = Json{{"backend", nullptr}, {"reason", "no Secret Service, no store"}};
    FakeDaemon daemon(*options.socket, status);
    const Captured c = capture([&] { return cli::run_unlock(options); });
    CHECK(c.status == 1);
    CHECK_THAT(c.err, Catch::Contains("no keyring backend: no Secret Service, no store"));
    fs::remove_all(options.socket->parent_path());
}

}  // namespace test_keyring_cli
