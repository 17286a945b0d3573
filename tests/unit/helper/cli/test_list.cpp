// hostkeeper list against a stand-in hostkeeperd that answers as PROTOCOL.md
// says: the request sent, what is printed, the JSON document, the shadowing
// sources (a throw-away HOME with a credentials.tfrc.json and a credentials
// block, a TF_TOKEN_* variable), and the exit status.
#include <catch2/catch.hpp>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <optional>

#include "fake_daemon.hpp"
#include "helper/cli/list.hpp"
#include "helper/client/exit_codes.hpp"
#include "helper/client/run_reporting.hpp"
#include "list_replies.hpp"
#include "proto/messages.hpp"

namespace test_list {

namespace cli = hostkeeper::helper::cli;
namespace client = hostkeeper::helper::client;
namespace proto = hostkeeper::proto;
using hk_unit::capture;
using hk_unit::Captured;
using hk_unit::FakeDaemon;
using hk_unit::list_reply;
using proto::Json;
namespace fs = std::filesystem;

namespace {

// The process's HOME and Terraform/OpenTofu variables pointed at a fresh
// directory (and every TF_TOKEN_* of the caller hidden) for one test.
class ThrowAwayHome {
  public:
    ThrowAwayHome() {
        char pattern[] = "/tmp/hk-unit-list.XXXXXX";
        root_ = ::mkdtemp(pattern);
        fs::create_directories(root_ / "home");
        for (const char* name : {"HOME", "XDG_CONFIG_HOME", "XDG_DATA_HOME", "TF_CLI_CONFIG_FILE",
                                 "TERRAFORM_CONFIG", "TOFU_CLI_CONFIG_FILE"}) {
            save(name);
            ::unsetenv(name);
        }
        for (char** e = environ; *e != nullptr; ++e) {
            const std::string entry(*e);
            if (entry.rfind("TF_TOKEN_", 0) == 0) tokens_.push_back(entry);
        }
        for (const auto& entry : tokens_) ::unsetenv(entry.substr(0, entry.find('=')).c_str());
        ::setenv("HOME", (root_ / "home").c_str(), 1);
    }
    ~ThrowAwayHome() {
        for (const auto& [name, value] : saved_) {
            if (value) {
                ::setenv(name.c_str(), value->c_str(), 1);
            } else {
                ::unsetenv(name.c_str());
            }
        }
        for (const auto& entry : tokens_) {
            const auto eq = entry.find('=');
            ::setenv(entry.substr(0, eq).c_str(), entry.substr(eq + 1).c_str(), 1);
        }
        fs::remove_all(root_);
    }
    ThrowAwayHome(const ThrowAwayHome&) = delete;
    ThrowAwayHome& operator=(const ThrowAwayHome&) = delete;
    void write(const fs::path& relative, const std::string& text) const {
        fs::create_directories((home() / relative).parent_path());
        std::ofstream(home() / relative) << text;
    }
    fs::path home() const { return root_ / "home"; }

  private:
    void save(const char* name) {
        const char* value = std::getenv(name);
        saved_[name] = value ? std::optional<std::string>(value) : std::nullopt;
    }
    fs::path root_;
    std::map<std::string, std::optional<std::string>> saved_;
    std::vector<std::string> tokens_;
};

}  // namespace

TEST_CASE("list: one line per host, both forms, field names, locked, docker, git and rejected",
          "[cli][list]") {
    const ThrowAwayHome home;
    const auto options = hk_unit::fake_client_options();
    FakeDaemon daemon(*options.socket, list_reply());
    const Captured c = capture([&] { return cli::run_list(options, false); });
    CHECK(c.status == 0);
    CHECK(daemon.request().value("op", "") == "list");
    CHECK(c.out ==
          "app.terraform.io  backend secret-service, label \"hostkeeper: app.terraform.io\", "
          "stored 2026-11-20T09:12:44Z, fields: token user\n"
          "my-registry.example.com:8443  backend secret-service, label \"hostkeeper: "
          "my-registry.example.com:8443\", stored (unknown), fields: token user\n"
          "bücher.example.com (xn--bcher-kva.example.com)  backend secret-service, label "
          "\"hostkeeper: xn--bcher-kva.example.com\", stored (unknown), locked (fields unknown "
          "until it is unlocked)\n"
          "Docker credentials:\n"
          "  registry.example.com:5000  user alice, label \"hostkeeper docker: "
          "registry.example.com:5000\", stored 2026-11-21T17:01:02Z\n"
          "git credentials:\n"
          "  https://alice@gitlab.example.com/group/net.git  user alice, label \"hostkeeper git: "
          "https://gitlab.example.com/group/net.git\", stored 2026-11-22T08:00:00Z\n"
          "Refused their stored token recently:\n"
          "  tfe.example.com: HTTP 401 from https://tfe.example.com/api/v2/account/details, 2m0s "
          "ago: not handed out; run terraform login tfe.example.com, or hostkeeper check "
          "tfe.example.com once it is valid again\n");
    CHECK(c.err.empty());
}

TEST_CASE("list: what shadows each host, in the lines and in --json", "[cli][list]") {
    const ThrowAwayHome home;
    home.write(".terraform.d/credentials.tfrc.json",
               R"({"credentials":{"App.Terraform.IO":{"token":"file-token"}}})");
    home.write(".terraformrc",
               "credentials \"bücher.example.com\" {\n  token = \"block-token\"\n}\n");
    ::setenv("TF_TOKEN_my__registry_example_com:8443", "env-token", 1);
    ::setenv("TF_TOKEN_app_terraform_io", "env-token-2", 1);
    const auto options = hk_unit::fake_client_options();
    {
        FakeDaemon daemon(*options.socket, list_reply());
        const Captured c = capture([&] { return cli::run_list(options, false); });
        CHECK(c.status == 0);
        CHECK_THAT(c.out, Catch::Contains(
                              "fields: token user\n"
                              "  shadowed: TF_TOKEN_app_terraform_io in the environment wins over "
                              "the keyring\n"
                              "  shadowed: " +
                              (home.home() / ".terraform.d/credentials.tfrc.json").string() +
                              " (credentials.tfrc.json) wins over the keyring\n"));
        CHECK_THAT(c.out, Catch::Contains("  shadowed: TF_TOKEN_my__registry_example_com:8443 in "
                                          "the environment wins over the keyring\n"));
        CHECK_THAT(c.out, Catch::Contains("  shadowed: the credentials block at " +
                                          (home.home() / ".terraformrc").string() +
                                          ":1 wins over the keyring\n"));
        for (const char* secret : {"file-token", "block-token", "env-token"})
            CHECK_THAT(c.out + c.err, !Catch::Contains(secret));
    }
    fs::remove(*options.socket);
    {
        FakeDaemon daemon(*options.socket, list_reply());
        const Captured c = capture([&] { return cli::run_list(options, true); });
        CHECK(c.status == 0);
        const Json document = Json::parse(c.out);
        CHECK(document["backend"] == "secret-service");
        const Json& hosts = document["hosts"];
        REQUIRE(hosts.size() == 3);
        CHECK(hosts[0]["host"] == "app.terraform.io");
        CHECK(hosts[0]["display"] == "app.terraform.io");
        CHECK(hosts[0]["token_variable"] == "TF_TOKEN_app_terraform_io");
        CHECK(hosts[0]["fields"] == Json::array({"token", "user"}));
        CHECK(hosts[0]["shadowed_by"] ==
              Json::array({Json{{"source", "environment"}, {"where", "TF_TOKEN_app_terraform_io"}},
                           Json{{"source", "credentials.tfrc.json"},
                                {"where",
                                 (home.home() / ".terraform.d/credentials.tfrc.json").string()}}}));
        CHECK(hosts[1]["token_variable"] == "TF_TOKEN_my__registry_example_com:8443");
        CHECK(hosts[2]["display"] == "bücher.example.com");
        CHECK(hosts[2]["locked"] == true);
        CHECK(hosts[2]["fields"].is_null());
        CHECK(hosts[2]["shadowed_by"][0]["source"] == "credentials block");
        CHECK(document["docker"][0]["username"] == "alice");
        CHECK(document["git"][0]["url"] == "https://alice@gitlab.example.com/group/net.git");
        CHECK(document["git"][0]["path"] == "group/net.git");
        CHECK(document["rejected"][0]["status"] == 401);
        CHECK(document["warnings"] == Json::array());
        CHECK_THAT(c.out, !Catch::Contains("token\": \""));
    }
    ::unsetenv("TF_TOKEN_my__registry_example_com:8443");
    ::unsetenv("TF_TOKEN_app_terraform_io");
}

TEST_CASE("list: an unreadable credentials file is a warning, the list still comes",
          "[cli][list]") {
    const ThrowAwayHome home;
    home.write(".terraform.d/credentials.tfrc.json", "{not json");
    const auto options = hk_unit::fake_client_options();
    FakeDaemon daemon(*options.socket, list_reply());
    const Captured c = capture([&] { return cli::run_list(options, false); });
    CHECK(c.status == 0);
    CHECK_THAT(c.err, Catch::StartsWith("hostkeeper list: "));
    CHECK_THAT(c.err, Catch::Contains("credentials.tfrc.json"));
    CHECK_THAT(c.out, Catch::StartsWith("app.terraform.io  backend secret-service"));
}

TEST_CASE("list: nothing stored, and an old daemon", "[cli][list]") {
    const ThrowAwayHome home;
    const auto options = hk_unit::fake_client_options();
    {
        Json empty = proto::make_ok();
        empty["backend"] = "pass";
        empty["hosts"] = Json::array();
        empty["docker"] = Json::array();
        empty["rejected"] = Json::array();
        FakeDaemon daemon(*options.socket, empty);
        const Captured c = capture([&] { return cli::run_list(options, false); });
        CHECK(c.status == 0);
        CHECK(c.out == "no credentials stored in the keyring (pass)\n");
    }
    fs::remove(*options.socket);
    {
        FakeDaemon daemon(*options.socket,
                          proto::make_error(proto::ErrorCode::unknown_op, "unknown op \"list\""));
        const Captured c = capture([&] {
            return client::run_reporting("hostkeeper",
                                         [&] { return cli::run_list(options, false); });
        });
        CHECK(c.status == client::kExitFailed);
        CHECK_THAT(c.err, Catch::Contains("unknown op"));
    }
}

TEST_CASE("list: a stored expiry is shown, and warned of as the daemon judges it",
          "[helper][list]") {
    CHECK(cli::expiry_warning(Json{{"host", "h.example"}, {"warning_stage", "later"}}).empty());
    CHECK(cli::expiry_warning(Json{{"host", "h.example"}}).empty());
    const Json soon = {{"host", "h.example"},
                       {"expires_at", "2026-12-01T00:00:00Z"},
                       {"expires_in_s", 10 * 86400},
                       {"expiry_stage", "within_30_days"},
                       {"warning_stage", "within_30_days"},
                       {"renew_command", "terraform login h.example"}};
    CHECK_THAT(cli::expiry_warning(soon),
               Catch::StartsWith("token expires soon: h.example at 2026-12-01T00:00:00Z (in ") &&
                   Catch::EndsWith("): run terraform login h.example before then"));
    // Within 30 days, but a token the daemon renews itself on time: no warning.
    Json renewed = soon;
    renewed["warning_stage"] = "later";
    CHECK(cli::expiry_warning(renewed).empty());
    const Json past = {
        {"host", "h.example"},        {"expires_at", "2020-01-01T00:00:00Z"},
        {"expires_in_s", -5},         {"expiry_stage", "expired"},
        {"warning_stage", "expired"}, {"renew_command", "hostkeeper login h.example"}};
    CHECK(cli::expiry_warning(past) ==
          "token expired: h.example at 2020-01-01T00:00:00Z (its expires_at): not handed out; "
          "run hostkeeper login h.example");

    Json document = {{"backend", "secret-service"}, {"hosts", Json::array({soon})}};
    document["hosts"][0]["label"] = "l";
    document["hosts"][0]["fields"] = Json::array({"expires_at", "token"});
    const auto lines = cli::list_lines(document);
    REQUIRE(lines.size() == 2);
    CHECK_THAT(lines[0], Catch::Contains(", expires 2026-12-01T00:00:00Z"));
    CHECK_THAT(lines[1], Catch::StartsWith("  token expires soon: h.example"));
}

TEST_CASE("list: hosts with a token_command, with their state, in text and JSON",
          "[helper][list]") {
    const ThrowAwayHome home;
    const Json held = {{"host", "cmd.example"},
                       {"runs", 2},
                       {"running", false},
                       {"last_run_age_s", 30},
                       {"expires_in_s", 3000}};
    const Json failing = {{"host", "both.example"},
                          {"runs", 1},
                          {"running", true},
                          {"last_error", "token_command for both.example (aws) failed (exit 255)"}};
    Json document = {
        {"backend", "secret-service"},
        {"hosts",
         Json::array(
             {{{"host", "both.example"}, {"label", "l"}, {"fields", Json::array({"token"})}}})},
        {"commands", Json::array({held, failing})}};
    const auto lines = cli::list_lines(document);
    REQUIRE(lines.size() == 4);
    CHECK(lines[1] == "Tokens from a command (token_command):");
    CHECK(lines[2] == "  cmd.example  runs 2, token expires in 50m0s");
    CHECK(lines[3] ==
          "  both.example  runs 1, running now, no token held (the next get runs the command), "
          "last error: token_command for both.example (aws) failed (exit 255); its keyring item "
          "is not used");

    Json answer = document;
    answer["v"] = 1;
    answer["ok"] = true;
    CHECK(cli::list_document(answer)["commands"] == Json::array({held, failing}));
    answer.erase("commands");  // an older daemon
    CHECK(cli::list_document(answer)["commands"] == Json::array());
}

}  // namespace test_list
