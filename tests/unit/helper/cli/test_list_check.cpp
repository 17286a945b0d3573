// hostkeeper list and check against a stand-in hostkeeperd that answers as
// PROTOCOL.md says: the requests sent, what is printed, the JSON document,
// the shadowing sources (a throw-away HOME with a credentials.tfrc.json and a
// credentials block, a TF_TOKEN_* variable), and the exit status.
#include <catch2/catch.hpp>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <optional>

#include "fake_daemon.hpp"
#include "helper/cli/check.hpp"
#include "helper/cli/list.hpp"
#include "helper/client/exit_codes.hpp"
#include "helper/client/run_reporting.hpp"
#include "proto/messages.hpp"

namespace cli = hostkeeper::helper::cli;
namespace client = hostkeeper::helper::client;
namespace proto = hostkeeper::proto;
using hk_unit::capture;
using hk_unit::Captured;
using hk_unit::FakeDaemon;
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

Json host_entry(const char* host, const char* stored, bool locked) {
    return Json{{"host", host},
                {"label", std::string("hostkeeper: ") + host},
                {"stored", stored ? Json(stored) : Json(nullptr)},
                {"fields", locked ? Json(nullptr) : Json::array({"token", "user"})},
                {"locked", locked}};
}

Json list_reply() {
    Json reply = proto::make_ok();
    reply["backend"] = "secret-service";
    reply["hosts"] = Json::array({host_entry("app.terraform.io", "2026-11-20T09:12:44Z", false),
                                  host_entry("my-registry.example.com:8443", nullptr, false),
                                  host_entry("xn--bcher-kva.example.com", nullptr, true)});
    reply["docker"] = Json::array({Json{{"server", "registry.example.com:5000"},
                                        {"username", "alice"},
                                        {"label", "hostkeeper docker: registry.example.com:5000"},
                                        {"stored", "2026-11-21T17:01:02Z"}}});
    reply["rejected"] = Json::array({Json{{"host", "tfe.example.com"},
                                          {"url", "https://tfe.example.com/api/v2/account/details"},
                                          {"status", 401},
                                          {"age_s", 120}}});
    return reply;
}

Json check_reply(Json fields) {
    Json reply = proto::make_ok();
    for (auto& [key, value] : fields.items()) reply[key] = value;
    return reply;
}

}  // namespace

TEST_CASE("list: one line per host, both forms, field names, locked, docker and rejected",
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
          "Refused their stored token recently:\n"
          "  tfe.example.com: HTTP 401 from https://tfe.example.com/api/v2/account/details, 2m0s "
          "ago; run terraform login tfe.example.com\n");
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

TEST_CASE("check: every stored host, one line each, exit 7 when one was rejected", "[cli][check]") {
    const auto options = hk_unit::fake_client_options();
    FakeDaemon daemon(
        *options.socket,
        std::vector<Json>{
            list_reply(),
            check_reply({{"host", "app.terraform.io"},
                         {"result", "valid"},
                         {"user", "alice"},
                         {"url", "https://app.terraform.io/api/v2/account/details"},
                         {"status", 200}}),
            check_reply(
                {{"host", "my-registry.example.com:8443"},
                 {"result", "accepted"},
                 {"status", 200},
                 {"url", "https://my-registry.example.com:8443/.well-known/terraform.json"}}),
            check_reply({{"host", "xn--bcher-kva.example.com"},
                         {"result", "rejected"},
                         {"status", 401},
                         {"url", "https://xn--bcher-kva.example.com/api/v2/account/details"},
                         {"message", "the token was refused (HTTP 401)"}})});
    const Captured c = capture([&] { return cli::run_check(options, {}, false); });
    CHECK(c.status == client::kExitRejected);
    CHECK(c.out ==
          "app.terraform.io: valid (user alice)\n"
          "my-registry.example.com:8443: accepted (HTTP 200 from "
          "https://my-registry.example.com:8443/.well-known/terraform.json): the host has no "
          "tfe.v2 to say whose token it is\n"
          "bücher.example.com (xn--bcher-kva.example.com): rejected (HTTP 401 from "
          "https://xn--bcher-kva.example.com/api/v2/account/details): expired or revoked: run "
          "terraform login bücher.example.com\n");
    const auto& requests = daemon.requests();
    REQUIRE(requests.size() == 4);
    CHECK(requests[0].value("op", "") == "list");
    CHECK(requests[1].value("op", "") == "check");
    CHECK(requests[1].value("host", "") == "app.terraform.io");
    CHECK(requests[3].value("host", "") == "xn--bcher-kva.example.com");
}

TEST_CASE("check HOST...: named hosts, normalized; no credentials is not a failure; failed is 1",
          "[cli][check]") {
    const auto options = hk_unit::fake_client_options();
    SECTION("no credentials and valid: exit 0") {
        FakeDaemon daemon(*options.socket,
                          std::vector<Json>{check_reply({{"host", "other.example"},
                                                         {"result", "no_credentials"}}),
                                            check_reply({{"host", "xn--bcher-kva.example.com"},
                                                         {"result", "valid"},
                                                         {"user", "bob"}})});
        const Captured c = capture([&] {
            return cli::run_check(options, {"Other.Example", "bücher.example.com"}, false);
        });
        CHECK(c.status == 0);
        CHECK(c.out ==
              "other.example: no credentials stored\n"
              "bücher.example.com (xn--bcher-kva.example.com): valid (user bob)\n");
        CHECK(daemon.requests()[0].value("host", "") == "other.example");
        CHECK(daemon.requests()[1].value("host", "") == "xn--bcher-kva.example.com");
    }
    SECTION("failed and a locked keyring: exit 1, JSON with every answer") {
        FakeDaemon daemon(
            *options.socket,
            std::vector<Json>{
                check_reply({{"host", "down.example"},
                             {"result", "failed"},
                             {"message", "connecting to down.example: refused"}}),
                proto::make_error(proto::ErrorCode::keyring_locked, "the keyring is locked")});
        const Captured c = capture([&] {
            return cli::run_check(options, {"down.example", "locked.example"}, true);
        });
        CHECK(c.status == client::kExitFailed);
        const Json document = Json::parse(c.out);
        REQUIRE(document["results"].size() == 2);
        CHECK(document["results"][0]["result"] == "failed");
        CHECK(document["results"][0]["message"] == "connecting to down.example: refused");
        CHECK_FALSE(document["results"][0].contains("ok"));
        CHECK(document["results"][1]["host"] == "locked.example");
        CHECK(document["results"][1]["result"] == "failed");
        CHECK(document["results"][1]["error"] == "keyring_locked");
    }
    SECTION("an invalid host is a usage error before anything is asked") {
        const Captured c = capture([&] {
            return client::run_reporting(
                "hostkeeper", [&] { return cli::run_check(options, {"exa mple.com"}, false); });
        });
        CHECK(c.status == client::kExitUsage);
        CHECK_THAT(c.err, Catch::Contains("invalid hostname"));
    }
    SECTION("nothing stored") {
        Json empty = proto::make_ok();
        empty["hosts"] = Json::array();
        FakeDaemon daemon(*options.socket, empty);
        const Captured c = capture([&] { return cli::run_check(options, {}, false); });
        CHECK(c.status == 0);
        CHECK(c.out == "no credentials stored: nothing to check\n");
    }
}

TEST_CASE("check_line: each verdict", "[cli][check]") {
    CHECK(
        cli::check_line(Json{{"host", "a.example"}, {"result", "valid"}, {"user", "u"}}).verdict ==
        cli::Verdict::good);
    CHECK(cli::check_line(Json{{"host", "a.example"}, {"result", "rejected"}}).verdict ==
          cli::Verdict::rejected);
    CHECK(cli::check_line(Json{{"host", "a.example"}, {"result", "no_credentials"}}).verdict ==
          cli::Verdict::absent);
    const auto odd = cli::check_line(Json{{"host", "a.example"}, {"result", "surprise"}});
    CHECK(odd.verdict == cli::Verdict::failed);
    CHECK(odd.text == "a.example: failed: result surprise");
}
