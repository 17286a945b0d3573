// hostkeeper check against a stand-in hostkeeperd that answers as
// PROTOCOL.md says: the requests sent, one line per host, and the exit status.
#include <catch2/catch.hpp>

#include "fake_daemon.hpp"
#include "helper/cli/check.hpp"
#include "helper/client/exit_codes.hpp"
#include "helper/client/run_reporting.hpp"
#include "list_replies.hpp"
#include "proto/messages.hpp"

namespace test_check {

namespace cli = hostkeeper::helper::cli;
namespace client = hostkeeper::helper::client;
namespace proto = hostkeeper::proto;
using hk_unit::capture;
using hk_unit::Captured;
using hk_unit::FakeDaemon;
using hk_unit::list_reply;
using proto::Json;

namespace {

Json check_reply(Json fields) {
    Json reply = proto::make_ok();
    for (auto& [key, value] : fields.items()) reply[key] = value;
    return reply;
}

}  // namespace

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
    const auto unchecked =
        cli::check_line(Json{{"host", "git.example"},
                             {"result", "unchecked"},
                             {"status", 401},
                             {"url", "https://git.example/.well-known/terraform.json"}});
    CHECK(unchecked.verdict == cli::Verdict::unchecked);
    CHECK(
        unchecked.text ==
        "git.example: not checked (HTTP 401 from https://git.example/.well-known/terraform.json): "
        "the host serves no Terraform discovery document to its token (a host of git "
        "repositories or images may not); the token is still given out");
    const auto odd = cli::check_line(Json{{"host", "a.example"}, {"result", "surprise"}});
    CHECK(odd.verdict == cli::Verdict::failed);
    CHECK(odd.text == "a.example: failed: result surprise");
}

}  // namespace test_check
