// list, check and the Docker credential requests behind a real socket, with
// an in-memory keyring and a scripted HTTP client (the real keyring, a real
// HTTPS server and the real binaries are the integration and e2e tests').
#include <catch2/catch.hpp>
#include <string>

#include "dispatcher_fixture.hpp"
#include "proto/messages.hpp"
#include "socket_fixture.hpp"

namespace test_item_requests {

using namespace hostkeeper;
using test::FakeHttpClient;

namespace {

using Fixture = test::DispatcherFixture;

proto::Json op(proto::Op which, proto::Json fields = proto::Json::object()) {
    proto::Json r = proto::make_request(which);
    for (auto& [k, v] : fields.items()) r[k] = v;
    return r;
}

const std::string kDiscovery = "https://tfe.example/.well-known/terraform.json";
const std::string kAccount = "https://tfe.example/api/v2/account/details";

void tfe_routes(FakeHttpClient& http, long account_status) {
    http.routes[kDiscovery] = [] {
        return FakeHttpClient::json(R"({"tfe.v2":"/api/v2/","modules.v1":"/m/"})");
    };
    http.routes[kAccount] = [account_status] {
        auto r = FakeHttpClient::json(
            account_status == 200
                ? R"({"data":{"id":"user-1","type":"users","attributes":{"username":"alice"}}})"
                : R"({"errors":[{"status":"401","title":"unauthorized"}]})",
            account_status);
        r.content_type = "application/vnd.api+json";
        return r;
    };
}

}  // namespace

TEST_CASE("list names every host's item and its fields, never a value", "[daemon][items]") {
    Fixture f;
    f.keyring.put("b.example", R"({"token":"secret-b","org":"x"})");
    f.keyring.put("a.example", "bare-token-a");
    REQUIRE(f.request(op(proto::Op::docker_store, {{"server", "reg.example:5000"},
                                                   {"username", "bob"},
                                                   {"secret", "docker-secret"}}))
                .at("ok") == true);
    const proto::Json answer = f.request(op(proto::Op::list));
    REQUIRE(answer.at("ok") == true);
    CHECK(answer.at("backend") == "secret-service");
    const proto::Json& hosts = answer.at("hosts");
    REQUIRE(hosts.size() == 2);
    CHECK(hosts[0].at("host") == "a.example");
    CHECK(hosts[0].at("fields") ==
          proto::Json::array({"token"}));  // a bare token is served as {"token"}
    CHECK(hosts[1].at("host") == "b.example");
    CHECK(hosts[1].at("fields") == proto::Json::array({"token", "org"}));
    CHECK(hosts[1].at("locked") == false);
    CHECK(hosts[1].at("label") == "secret-service: b.example");
    REQUIRE(answer.at("docker").size() == 1);
    CHECK(answer.at("docker")[0].at("server") == "reg.example:5000");
    CHECK(answer.at("docker")[0].at("username") == "bob");
    CHECK(answer.at("rejected") == proto::Json::array());
    const std::string text = answer.dump();
    CHECK(text.find("secret-b") == std::string::npos);
    CHECK(text.find("bare-token-a") == std::string::npos);
    CHECK(text.find("docker-secret") == std::string::npos);
}

TEST_CASE("list of a locked keyring lists every item as locked and asks once", "[daemon][items]") {
    Fixture f;
    f.keyring.put("a.example", R"({"token":"a"})");
    f.keyring.put("b.example", R"({"token":"b"})");
    f.keyring.put("c.example", R"({"token":"c"})");
    f.keyring.fail_lookups_with(proto::ErrorCode::keyring_locked);
    const proto::Json answer = f.request(op(proto::Op::list));
    REQUIRE(answer.at("ok") == true);
    REQUIRE(answer.at("hosts").size() == 3);
    for (const auto& h : answer.at("hosts")) {
        CHECK(h.at("locked") == true);
        CHECK(h.at("fields").is_null());
    }
    CHECK(f.keyring.lookups == 1);
}

TEST_CASE("list fails with the keyring's error when it cannot list", "[daemon][items]") {
    Fixture f;
    f.keyring.fail_with(proto::ErrorCode::keyring_unavailable);
    CHECK(test::error_code_of(f.request(op(proto::Op::list))) == "keyring_unavailable");
}

TEST_CASE("Docker credentials: store, get, list and erase, apart from a host's Terraform item",
          "[daemon][items][docker]") {
    Fixture f;
    f.keyring.put("reg.example", R"({"token":"terraform-token"})");
    const proto::Json server = {{"server", "  reg.example  "}};  // blanks around it are dropped
    CHECK(f.request(op(proto::Op::docker_get, server)).dump() ==
          R"({"v":1,"ok":true,"found":false})");
    REQUIRE(f.request(op(proto::Op::docker_store,
                         {{"server", "reg.example"}, {"username", "alice"}, {"secret", "p@ss"}}))
                .at("ok") == true);
    CHECK(
        f.request(op(proto::Op::docker_get, server)).dump() ==
        R"({"v":1,"ok":true,"found":true,"server":"reg.example","username":"alice","secret":"p@ss"})");
    // The Terraform item of the same host is untouched, and the other way round.
    CHECK(f.keyring.text("reg.example") == R"({"token":"terraform-token"})");
    proto::Json forget = op(proto::Op::forget, {{"host", "reg.example"}});
    REQUIRE(f.request(forget).at("ok") == true);
    CHECK(f.request(op(proto::Op::docker_get, server)).at("found") == true);
    // Replacing keeps one item per server.
    REQUIRE(f.request(op(proto::Op::docker_store,
                         {{"server", "reg.example"}, {"username", "bob"}, {"secret", "new"}}))
                .at("ok") == true);
    CHECK(f.request(op(proto::Op::docker_list)).dump() ==
          R"({"v":1,"ok":true,"servers":{"reg.example":"bob"}})");
    CHECK(f.request(op(proto::Op::docker_erase, server)).dump() ==
          R"({"v":1,"ok":true,"erased":true})");
    CHECK(f.request(op(proto::Op::docker_erase, server)).dump() ==
          R"({"v":1,"ok":true,"erased":false})");
    CHECK(f.request(op(proto::Op::docker_list)).dump() == R"({"v":1,"ok":true,"servers":{}})");
}

TEST_CASE("Docker get: a server's item, its other spelling's, else its token_command",
          "[daemon][items][docker]") {
    Fixture f;
    // No item: the command's token, as the password of token_username.
    CHECK(f.request(op(proto::Op::docker_get, {{"server", "ecr.example"}})).dump() ==
          R"({"v":1,"ok":true,"found":true,"server":"ecr.example","username":"AWS",)"
          R"("secret":"cmd-token-1"})");
    // Kept as the command's tokens are: the next get does not run it again.
    CHECK(f.request(op(proto::Op::docker_get, {{"server", "ecr.example"}})).at("secret") ==
          "cmd-token-1");
    CHECK(f.command_runs == 1);
    // OpenTofu's spelling of the server, https://HOST, names the same host.
    CHECK(f.request(op(proto::Op::docker_get, {{"server", "https://ecr.example"}})).at("secret") ==
          "cmd-token-1");
    // Without a token_username the command is not used: Docker needs a user name.
    CHECK(f.request(op(proto::Op::docker_get, {{"server", "bare.example"}})).at("found") == false);
    CHECK(f.command_runs == 1);
    // A Docker item stored under the server's other spelling comes before
    // the command, and one under its own spelling before that.
    const auto store = [&](const std::string& server, const std::string& user) {
        REQUIRE(f.request(op(proto::Op::docker_store,
                             {{"server", server}, {"username", user}, {"secret", "p@ss"}}))
                    .at("ok") == true);
    };
    const auto user_for = [&](const std::string& server) {
        return f.request(op(proto::Op::docker_get, {{"server", server}})).at("username");
    };
    store("https://ecr.example", "tofu");
    CHECK(user_for("ecr.example") == "tofu");
    store("ecr.example", "alice");
    CHECK(user_for("ecr.example") == "alice");
    CHECK(user_for("https://ecr.example") == "tofu");
    CHECK(f.command_runs == 1);
    // A locked keyring: the command still answers for its host under either
    // spelling (it is not the keyring's), and every other server is
    // keyring_locked, never not found.
    f.keyring.fail_lookups_with(proto::ErrorCode::keyring_locked);
    CHECK(f.request(op(proto::Op::docker_get, {{"server", "ecr.example"}})).at("secret") ==
          "cmd-token-1");
    CHECK(user_for("https://ecr.example") == "AWS");
    CHECK(
        f.request(op(proto::Op::docker_get, {{"server", "bare.example"}})).at("error").at("code") ==
        "keyring_locked");
}

TEST_CASE("bad Docker requests get a clear error and change nothing", "[daemon][items][docker]") {
    Fixture f;
    REQUIRE(f.request(op(proto::Op::docker_store,
                         {{"server", "keep.example"}, {"username", "u"}, {"secret", "keep"}}))
                .at("ok") == true);
    const auto refused = [&](proto::Op which, const proto::Json& fields, const std::string& code,
                             const std::string& words) {
        const proto::Json answer = f.request(op(which, fields));
        CAPTURE(fields.dump());
        CHECK(test::error_code_of(answer) == code);
        CHECK_THAT(answer.at("error").at("message").get<std::string>(), Catch::Contains(words));
    };
    refused(proto::Op::docker_get, proto::Json::object(), "bad_request", "server");
    refused(proto::Op::docker_get, {{"server", "   "}}, "bad_request", "no credentials server URL");
    refused(proto::Op::docker_get, {{"server", "a\nb"}}, "bad_request", "control character");
    refused(proto::Op::docker_get, {{"server", std::string(1025, 'x')}}, "bad_request",
            "over 1024 bytes");
    refused(proto::Op::docker_store,
            {{"server", "keep.example"}, {"username", ""}, {"secret", "x"}}, "bad_request",
            "no credentials username");
    refused(proto::Op::docker_store, {{"server", "keep.example"}, {"username", "u"}, {"secret", 5}},
            "bad_request", "secret");
    refused(proto::Op::docker_store, {{"server", "keep.example"}, {"secret", "x"}}, "bad_request",
            "username");
    refused(proto::Op::docker_erase, {{"server", 7}}, "bad_request", "server");
    CHECK(f.request(op(proto::Op::docker_get, {{"server", "keep.example"}})).at("secret") ==
          "keep");
}

TEST_CASE("check asks a TFE-like host who the token belongs to", "[daemon][items][check]") {
    Fixture f;
    f.keyring.put("tfe.example", R"({"token":"good-token"})");
    tfe_routes(f.http, 200);
    const proto::Json answer = f.request(op(proto::Op::check, {{"host", "TFE.example"}}));
    CHECK(answer.at("result") == "valid");
    CHECK(answer.at("user") == "alice");
    CHECK(answer.at("url") == kAccount);
    CHECK(answer.at("status") == 200);
    // No stored expires_at: the user's token list is asked for it too.
    REQUIRE(f.http.requests.size() == 3);
    CHECK(f.http.requests[2].url ==
          "https://tfe.example/api/v2/users/user-1/authentication-tokens");
    for (const auto& seen : f.http.requests) CHECK(seen.bearer == "good-token");
    CHECK_THAT(answer.at("expiry_note").get<std::string>(), Catch::StartsWith("expiry unknown: "));
    CHECK_FALSE(answer.contains("learned_expires_at"));
}

TEST_CASE("check learns the expiry of a user's only token from the token list",
          "[daemon][items][check]") {
    Fixture f;
    f.keyring.put("tfe.example", R"({"token":"good-token"})");
    f.keyring.put("dated.example", R"({"token":"t","expires_at":"2027-01-01T00:00:00Z"})");
    tfe_routes(f.http, 200);
    f.http.routes["https://tfe.example/api/v2/users/user-1/authentication-tokens"] = [] {
        auto r = FakeHttpClient::json(
            R"({"data":[{"id":"at-1","type":"authentication-tokens",)"
            R"("attributes":{"token":null,"expired-at":"2027-03-01T12:00:00.000Z"}}]})");
        r.content_type = "application/vnd.api+json";
        return r;
    };
    const proto::Json answer = f.request(op(proto::Op::check, {{"host", "tfe.example"}}));
    CHECK(answer.at("result") == "valid");
    CHECK(answer.at("learned_expires_at") == "2027-03-01T12:00:00Z");
    CHECK_FALSE(answer.contains("expiry_note"));
    const proto::Json expiries = f.request(op(proto::Op::status)).at("credentials").at("expiries");
    REQUIRE(expiries.size() == 1);
    CHECK(expiries[0].at("host") == "tfe.example");
    CHECK(expiries[0].at("expires_at") == "2027-03-01T12:00:00Z");
}

TEST_CASE("check reports a revoked token, and status remembers it until a new one is stored",
          "[daemon][items][check]") {
    Fixture f;
    f.keyring.put("tfe.example", R"({"token":"revoked"})");
    tfe_routes(f.http, 401);
    const proto::Json answer = f.request(op(proto::Op::check, {{"host", "tfe.example"}}));
    CHECK(answer.at("result") == "rejected");
    CHECK(answer.at("status") == 401);
    CHECK_THAT(answer.at("message").get<std::string>(),
               Catch::Contains("expired or was revoked") &&
                   Catch::Contains("terraform login tfe.example"));
    const proto::Json status = f.request(op(proto::Op::status));
    REQUIRE(status.at("credentials").at("rejected").size() == 1);
    CHECK(status.at("credentials").at("rejected")[0].at("host") == "tfe.example");
    CHECK(status.at("credentials").at("rejected")[0].at("url") == kAccount);
    CHECK(f.request(op(proto::Op::list)).at("rejected").size() == 1);
    REQUIRE(f.request(op(proto::Op::store,
                         {{"host", "tfe.example"}, {"credentials", {{"token", "fresh"}}}}))
                .at("ok") == true);
    CHECK(f.request(op(proto::Op::status)).at("credentials").at("rejected").empty());
}

TEST_CASE(
    "check without credentials sends nothing; a plain registry is only 'accepted'; "
    "a refused discovery document is 'unchecked'",
    "[daemon][items][check]") {
    Fixture f;
    tfe_routes(f.http, 200);
    CHECK(f.request(op(proto::Op::check, {{"host", "tfe.example"}})).at("result") ==
          "no_credentials");
    CHECK(f.http.requests.empty());
    f.keyring.put("reg.example", R"({"token":"t"})");
    f.http.routes["https://reg.example/.well-known/terraform.json"] = [] {
        return FakeHttpClient::json(R"({"modules.v1":"/m/"})");
    };
    const proto::Json answer = f.request(op(proto::Op::check, {{"host", "reg.example"}}));
    CHECK(answer.at("result") == "accepted");
    CHECK(answer.at("status") == 200);
    f.http.routes["https://reg.example/.well-known/terraform.json"] = [] {
        return FakeHttpClient::json(R"({"errors":["unauthorized"]})", 401);
    };
    // A discovery document refused to the token judges nothing: not
    // checked, and the token is still served.
    const proto::Json refused = f.request(op(proto::Op::check, {{"host", "reg.example"}}));
    CHECK(refused.at("result") == "unchecked");
    CHECK(refused.at("status") == 401);
    CHECK(f.request(op(proto::Op::status)).at("credentials").at("rejected").empty());
    CHECK(f.request(op(proto::Op::get, {{"host", "reg.example"}})).at("found") == true);
}

TEST_CASE("check never sends the token to a tfe.v2 on another host", "[daemon][items][check]") {
    Fixture f;
    f.keyring.put("tfe.example", R"({"token":"mine"})");
    f.http.routes[kDiscovery] = [] {
        return FakeHttpClient::json(R"({"tfe.v2":"https://elsewhere.example/api/v2/"})");
    };
    f.http.routes["https://elsewhere.example/api/v2/account/details"] = [] {
        return FakeHttpClient::json(R"({"data":{"attributes":{"username":"mallory"}}})");
    };
    const proto::Json answer = f.request(op(proto::Op::check, {{"host", "tfe.example"}}));
    CHECK(answer.at("result") == "failed");
    CHECK_THAT(answer.at("message").get<std::string>(), Catch::Contains("another host"));
    REQUIRE(f.http.requests.size() == 1);
    CHECK(f.http.requests[0].url == kDiscovery);
}

TEST_CASE("check of a locked keyring is keyring_locked and sends nothing",
          "[daemon][items][check]") {
    Fixture f;
    f.keyring.put("tfe.example", R"({"token":"t"})");
    f.keyring.fail_lookups_with(proto::ErrorCode::keyring_locked);
    tfe_routes(f.http, 200);
    CHECK(test::error_code_of(f.request(op(proto::Op::check, {{"host", "tfe.example"}}))) ==
          "keyring_locked");
    CHECK(f.http.requests.empty());
}

}  // namespace test_item_requests
