// Which stored tokens are handed out, through the real daemon, a real
// gnome-keyring and a real HTTPS server: one a host's service refused (HTTP
// 401 to the daemon's own request) is not, until a new token is stored, it
// is forgotten, `check` finds it valid again or a flush forgets the
// refusal; nor one past its stored expires_at. `get` then answers {} as for
// no credentials, so that `terraform login` works again; status and list
// say why and what to run. A discovery document refused to the token is no
// verdict on it: a host of git repositories may refuse it to any token.
#include <catch2/catch.hpp>
#include <chrono>
#include <ctime>
#include <mutex>
#include <set>
#include <string>

#include "https_world.hpp"

namespace test_token_standing {

using namespace hostkeeper::it;
using hostkeeper::test::json_response;
using hostkeeper::test::Request;
using hostkeeper::test::Response;

namespace {

// A TFE-like host whose module registry and account/details answer 401 to
// a token it does not take; its discovery document is anyone's.
class TfeHost {
  public:
    TfeHost(World& world, const std::string& name) {
        world.server.route(name + ".localhost", kDoc, [](const Request&) {
            return json_response(R"({"tfe.v2":"/api/v2/","modules.v1":"/m/"})");
        });
        world.server.route(
            name + ".localhost", "/m/acme/x/null/versions", [this](const Request& r) {
                if (r.authorization && !takes(*r.authorization))
                    return json_response(R"({"errors":["unauthorized"]})", 401);
                return json_response(R"({"modules":[{"versions":[{"version":"1.0.0"}]}]})");
            });
        world.server.route(
            name + ".localhost", "/api/v2/account/details", [this](const Request& r) {
                if (!r.authorization || !takes(*r.authorization))
                    return json_response(R"({"errors":[{"status":"401"}]})", 401);
                Response ok = json_response(R"({"data":{"id":"user-1","type":"users",)"
                                            R"("attributes":{"username":"hk-alice"}}})");
                ok.headers = {{"Content-Type", "application/vnd.api+json"}};
                return ok;
            });
    }
    void take(const std::string& token) {
        const std::lock_guard lock(mutex_);
        tokens_.insert(token);
    }

  private:
    bool takes(const std::string& authorization) {
        const std::lock_guard lock(mutex_);
        return tokens_.count(authorization.substr(std::string("Bearer ").size())) > 0;
    }
    std::mutex mutex_;
    std::set<std::string> tokens_;
};

// A module registry request the daemon makes afresh (with the stored
// token, unless withheld).
Json ask_registry(const World& world, const std::string& host) {
    return world.ask(
        {{"op", "module_versions"}, {"module", host + "/acme/x/null"}, {"refresh", true}});
}

Json listed_host(const World& world, const std::string& host) {
    const Result list = world.cli({"list", "--json"});
    INFO(list.err);
    REQUIRE(list.exit_code == 0);
    const Json document = Json::parse(list.out);
    for (const Json& h : document.at("hosts")) {
        if (h.at("host") == host) return h;
    }
    FAIL("list --json has no " << host << ": " << list.out);
    return {};
}

}  // namespace

TEST_CASE("a refused token answers {} until stored again, forgotten or checked valid",
          "[token-standing]") {
    World world;
    TfeHost tfe_host(world, "auth");
    world.start();
    const std::string tfe = world.host("auth");

    store_token(world, tfe, "tok-revoked");
    CHECK(helper(world.socket(), {"get", tfe}).out == R"({"token":"tok-revoked"})"
                                                      "\n");
    // The module registry is sent it and answers 401: from now on it is withheld.
    (void)ask_registry(world, tfe);
    const Result withheld = helper(world.socket(), {"get", tfe});
    CHECK(withheld.exit_code == 0);
    CHECK(withheld.out == "{}\n");

    const Json rejected = world.status("credentials").at("rejected");
    REQUIRE(rejected.size() == 1);
    CHECK(rejected[0].at("host") == tfe);
    CHECK(rejected[0].at("withheld") == true);
    CHECK(rejected[0].at("url") == world.url("auth", "/m/acme/x/null/versions"));
    CHECK(rejected[0].at("at").get<std::string>().size() == 20);
    CHECK(rejected[0].at("next_steps") ==
          Json::array({"terraform login " + tfe, "hostkeeper check " + tfe}));
    const Result status = world.cli({"status"});
    CHECK_THAT(status.out, Catch::Contains("token refused: " + tfe) &&
                               Catch::Contains("not handed out") &&
                               Catch::Contains("hostkeeper check " + tfe));
    const Json entry = listed_host(world, tfe);
    CHECK(entry.at("withheld").at("reason") == "refused");
    CHECK_THAT(world.cli({"list"}).out, Catch::Contains("not handed out"));
    const Result token = world.cli({"token", tfe, "--force"});
    CHECK(token.exit_code != 0);
    CHECK(token.out.empty());
    CHECK_THAT(token.err, Catch::Contains("not handed out"));

    // The registry is now asked without it, and answers.
    const std::size_t before = world.server.requests().size();
    CHECK(ask_registry(world, tfe).at("ok") == true);
    const auto requests = world.server.requests();
    REQUIRE(requests.size() > before);
    CHECK_FALSE(requests.back().authorization.has_value());

    // A new token stored (as terraform login stores it) is served at once.
    tfe_host.take("tok-new");
    store_token(world, tfe, "tok-new");
    CHECK(helper(world.socket(), {"get", tfe}).out == R"({"token":"tok-new"})"
                                                      "\n");
    CHECK(world.status("credentials").at("rejected").empty());

    // Forgotten: no credentials, no refusal.
    store_token(world, tfe, "tok-revoked-2");
    (void)ask_registry(world, tfe);
    REQUIRE(world.status("credentials").at("rejected").size() == 1);
    forget_token(world, tfe);
    CHECK(world.status("credentials").at("rejected").empty());
    CHECK(helper(world.socket(), {"get", tfe}).out == "{}\n");

    // Valid again (the host takes it now): check sends it, and it is served.
    store_token(world, tfe, "tok-flaky");
    (void)ask_registry(world, tfe);
    REQUIRE(helper(world.socket(), {"get", tfe}).out == "{}\n");
    tfe_host.take("tok-flaky");
    const Result check = world.cli({"check", tfe});
    INFO(check.out << check.err);
    CHECK(check.exit_code == 0);
    CHECK(helper(world.socket(), {"get", tfe}).out == R"({"token":"tok-flaky"})"
                                                      "\n");
    CHECK(world.status("credentials").at("rejected").empty());

    // Refused again, then a flush forgets the refusal: served again.
    store_token(world, tfe, "tok-refused-3");
    (void)ask_registry(world, tfe);
    REQUIRE(helper(world.socket(), {"get", tfe}).out == "{}\n");
    CHECK(world.cli({"flush", tfe}).exit_code == 0);
    CHECK(world.status("credentials").at("rejected").empty());
    CHECK(helper(world.socket(), {"get", tfe}).out == R"({"token":"tok-refused-3"})"
                                                      "\n");
    (void)ask_registry(world, tfe);
    REQUIRE(world.status("credentials").at("rejected").size() == 1);
    CHECK(world.cli({"flush"}).exit_code == 0);
    CHECK(world.status("credentials").at("rejected").empty());
    forget_token(world, tfe);
}

TEST_CASE("a discovery document refused to the token judges nothing: git keeps its token",
          "[token-standing]") {
    World world;
    // A host of git repositories: no Terraform services, a 401 to any token.
    world.server.route("other.localhost", kDoc, [](const Request& r) {
        if (r.authorization) return json_response(R"({"errors":["unauthorized"]})", 401);
        return json_response(R"({"errors":["not found"]})", 404);
    });
    world.start();
    const std::string git = world.host("other");
    store_token(world, git, "tok-git");

    // Discovery (as Terraform's helper would make it) and check send it and
    // get a 401: nothing is withheld.
    (void)world.ask_discover(git, true);
    const Json check = world.ask({{"op", "check"}, {"host", git}});
    CHECK(check.at("result") == "unchecked");
    CHECK(check.at("status") == 401);
    CHECK(check.at("url") == world.url("other", kDoc));
    const Result cli_check = world.cli({"check", git});
    INFO(cli_check.out << cli_check.err);
    CHECK(cli_check.exit_code == 0);
    CHECK_THAT(cli_check.out, Catch::Contains(git + ": not checked (HTTP 401 from " +
                                              world.url("other", kDoc) + ")") &&
                                  Catch::Contains("the token is still given out"));
    const Result doctor = world.cli({"doctor"});
    CHECK_THAT(doctor.out, Catch::Contains("skip  token for " + git + ": not checked"));
    CHECK_THAT(doctor.out, !Catch::Contains("token for " + git + ": rejected"));
    CHECK_THAT(doctor.out, !Catch::Contains("terraform login " + git));
    CHECK(world.status("credentials").at("rejected").empty());
    CHECK(helper(world.socket(), {"get", git}).out == R"({"token":"tok-git"})"
                                                      "\n");
    forget_token(world, git);
}

TEST_CASE("a stored expires_at: kept, not served once past, warned of 10 days ahead",
          "[token-standing]") {
    World world;
    TfeHost tfe_host(world, "auth");
    world.start();
    const std::string tfe = world.host("auth");
    tfe_host.take("tok-expired");
    tfe_host.take("tok-soon");

    // Past: stored as given, never served, never sent (not even by check).
    const std::string past = R"({"token":"tok-expired","expires_at":"2020-01-01T00:00:00Z"})";
    REQUIRE(helper(world.socket(), {"store", tfe}, past).exit_code == 0);
    const Result got = helper(world.socket(), {"get", tfe});
    CHECK(got.exit_code == 0);
    CHECK(got.out == "{}\n");
    Json entry = listed_host(world, tfe);
    CHECK(entry.at("expires_at") == "2020-01-01T00:00:00Z");
    CHECK(entry.at("expiry_stage") == "expired");
    CHECK(entry.at("withheld").at("reason") == "expired");
    const Json check = world.ask({{"op", "check"}, {"host", tfe}});
    CHECK(check.at("result") == "rejected");
    CHECK_THAT(check.at("message").get<std::string>(),
               Catch::Contains("expired at 2020-01-01T00:00:00Z"));
    CHECK_THAT(world.cli({"check", tfe}).out, Catch::Contains("expired at 2020-01-01T00:00:00Z"));
    (void)world.ask_discover(tfe, true);
    (void)ask_registry(world, tfe);
    for (const Request& r : world.server.requests()) CHECK_FALSE(r.authorization.has_value());

    // 10 days ahead: served with its expires_at, and warned of.
    const std::string soon = utc_in(std::chrono::hours(24 * 10));
    const std::string object = R"({"token":"tok-soon","expires_at":")" + soon + R"("})";
    REQUIRE(helper(world.socket(), {"store", tfe}, object).exit_code == 0);
    CHECK(helper(world.socket(), {"get", tfe}).out == object + "\n");
    const Json expiries = world.status("credentials").at("expiries");
    REQUIRE(expiries.size() == 1);
    CHECK(expiries[0].at("expires_at") == soon);
    CHECK(expiries[0].at("expiry_stage") == "within_30_days");
    CHECK_THAT(world.cli({"status"}).out,
               Catch::Contains("token expires soon: " + tfe + " at " + soon) &&
                   Catch::Contains("run terraform login " + tfe + " before then"));
    CHECK_THAT(world.cli({"list"}).out, Catch::Contains("expires " + soon));
    CHECK_THAT(world.cli({"doctor"}).out, Catch::Contains("token expires soon: " + tfe));
    CHECK_THAT(world.daemon_log(),
               Catch::Contains("the stored token of " + tfe + " expires at " + soon));
    CHECK_THAT(world.daemon_log(),
               Catch::Contains("the stored token of " + tfe + " expired at 2020-01-01T00:00:00Z"));

    // Not RFC 3339: refused, and the stored item stays as it was.
    const Result bad =
        helper(world.socket(), {"store", tfe}, R"({"token":"t","expires_at":"tomorrow"})");
    CHECK(bad.exit_code == 2);
    CHECK_THAT(bad.err, Catch::Contains("expires_at") && Catch::Contains("RFC 3339") &&
                            Catch::Contains("nothing was stored"));
    CHECK(helper(world.socket(), {"get", tfe}).out == object + "\n");
    forget_token(world, tfe);
}

}  // namespace test_token_standing
