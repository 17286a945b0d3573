// The pieces of hostkeeper's login.v1 client (login_pkce.hpp,
// login_token.hpp, login_service.hpp's login_endpoints) and the credentials
// a login stores (credentials/login_credentials.hpp).
#include <catch2/catch.hpp>
#include <string>

#include "daemon/credentials/login_credentials.hpp"
#include "daemon/credentials/token_expiry.hpp"
#include "daemon/discovery/login_pkce.hpp"
#include "daemon/discovery/login_service.hpp"
#include "daemon/discovery/login_token.hpp"
#include "proto/error.hpp"
#include "proto/json.hpp"

namespace test_login_token {

using namespace hostkeeper;
using namespace daemon::discovery;
using proto::Json;

TEST_CASE("the S256 challenge is RFC 7636's appendix B example", "[daemon][discovery][login]") {
    CHECK(pkce_challenge("dBjftJeZ4CVP-mB92K27uhbUJU1p1r_wW1gFWFOEjXk") ==
          "E9Melhoa2OwvFrEMTJguCHaoeK1t8URWbuGJSstw-cM");
}

TEST_CASE("verifiers and states are 43 base64url characters, each new",
          "[daemon][discovery][login]") {
    const std::string a = random_urlsafe();
    const std::string b = random_urlsafe();
    CHECK(a.size() == 43);
    CHECK(a != b);
    CHECK(a.find_first_not_of("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_") ==
          std::string::npos);
}

TEST_CASE("a token response gives the access token, its lifetime and the refresh token",
          "[daemon][discovery][login]") {
    const LoginTokens tokens = parse_token_response(
        R"({"access_token":"at-1","token_type":"Bearer","expires_in":3600,"refresh_token":"rt-1"})");
    CHECK(tokens.access_token.view() == "at-1");
    REQUIRE(tokens.expires_in);
    CHECK(tokens.expires_in->count() == 3600);
    REQUIRE(tokens.refresh_token);
    CHECK(tokens.refresh_token->view() == "rt-1");

    const LoginTokens bare = parse_token_response(R"({"access_token":"at-2"})");
    CHECK_FALSE(bare.expires_in);
    CHECK_FALSE(bare.refresh_token);
}

TEST_CASE("a bad token response is refused with a clear error that quotes no token",
          "[daemon][discovery][login]") {
    using Catch::Contains;
    const auto refused = [](const std::string& body, const std::string& why) {
        CAPTURE(body);
        CHECK_THROWS_WITH(parse_token_response(body), Contains(why));
        try {
            (void)parse_token_response(body);
        } catch (const TokenResponseError& e) {
            CHECK(std::string(e.what()).find("secret-value") == std::string::npos);
        }
    };
    refused("not json secret-value", "the token response is");
    refused("[\"secret-value\"]", "not a JSON object");
    refused(R"({"token_type":"bearer"})", "no string \"access_token\"");
    refused(R"({"access_token":""})", "no string \"access_token\"");
    refused(R"({"access_token":{"x":"secret-value"}})", "no string \"access_token\"");
    refused(R"({"access_token":"secret-value","token_type":"mac"})", "not \"bearer\"");
    refused(R"({"access_token":"secret-value","expires_in":-5})", "\"expires_in\"");
    refused(R"({"access_token":"secret-value","expires_in":"60"})", "\"expires_in\"");
    refused(R"({"access_token":"secret-value","expires_in":1e12})", "\"expires_in\"");
    refused(R"({"access_token":"secret-value","refresh_token":7})", "\"refresh_token\"");
    refused(R"({"a":[[[[[["secret-value"]]]]]]})", "the token response is");
    refused(std::string(kMaxTokenResponse + 1, ' '), "over 65536 bytes");
}

TEST_CASE("an error response names the server's error and its description",
          "[daemon][discovery][login]") {
    CHECK(token_error(R"({"error":"invalid_grant","error_description":"revoked\nnow"})") ==
          "invalid_grant: revoked now");
    CHECK(token_error(R"({"error":"invalid_client"})") == "invalid_client");
    CHECK(token_error("<html>") == "");
    CHECK(token_error(R"({"error":5})") == "");
}

TEST_CASE("login.v1 needs authz, token and client; ports and grant types are checked",
          "[daemon][discovery][login]") {
    const Json good = {{"client", "terraform-cli"},
                       {"authz", "https://a.example/authz"},
                       {"token", "https://a.example/token"},
                       {"grant_types", {"authz_code"}},
                       {"ports", {10000, 10010}}};
    const LoginEndpoints endpoints = login_endpoints("a.example", good);
    CHECK(endpoints.client == "terraform-cli");
    CHECK(endpoints.first_port == 10000);
    CHECK(endpoints.last_port == 10010);
    for (const char* missing : {"client", "authz", "token"}) {
        Json bad = good;
        bad.erase(missing);
        CHECK_THROWS_WITH(login_endpoints("a.example", bad), Catch::Contains(missing));
    }
    Json grants = good;
    grants["grant_types"] = {"password"};
    CHECK_THROWS_WITH(login_endpoints("a.example", grants), Catch::Contains("authz_code"));
    for (const Json& ports : {Json{80, 90}, Json{2000, 1500}, Json{"a", "b"}, Json{1025}}) {
        Json bad = good;
        bad["ports"] = ports;
        CHECK_THROWS_WITH(login_endpoints("a.example", bad), Catch::Contains("ports"));
    }
}

TEST_CASE("a login's credentials keep the refresh token, and serving drops it",
          "[daemon][credentials][login]") {
    using namespace daemon::credentials;
    const WallTime issued = std::chrono::system_clock::from_time_t(1798675200);
    const LoginRecord record{proto::Secret("rt-secret"), "https://a.example/token", "cli", issued};
    const proto::Secret stored =
        login_credentials(proto::Secret("at-1"), issued + std::chrono::hours(1), &record);
    const Json object = Json::parse(stored.view());
    CHECK(object.at("token") == "at-1");
    CHECK(object.at("expires_at") == "2026-12-31T01:00:00Z");
    CHECK(object.at("login").at("refresh_token") == "rt-secret");

    const std::optional<LoginRecord> read = login_of(stored);
    REQUIRE(read);
    CHECK(read->refresh_token.view() == "rt-secret");
    CHECK(read->token_url == "https://a.example/token");
    CHECK(read->client_id == "cli");
    CHECK(read->issued_at == issued);

    const proto::Secret shown = served(stored.clone());
    CHECK(shown.view().find("rt-secret") == std::string_view::npos);
    CHECK(Json::parse(shown.view()) ==
          Json{{"token", "at-1"}, {"expires_at", "2026-12-31T01:00:00Z"}});
    CHECK_FALSE(login_of(proto::Secret(R"({"token":"t"})")));
}

TEST_CASE("a login is refreshed a tenth of its lifetime ahead, at most 5 minutes",
          "[daemon][credentials][login]") {
    using namespace daemon::credentials;
    using std::chrono::minutes;
    using std::chrono::seconds;
    const WallTime t0 = std::chrono::system_clock::from_time_t(1798675200);
    CHECK(refresh_due(t0 + minutes(10), t0) == t0 + minutes(9));
    CHECK(refresh_due(t0 + seconds(30), t0) == t0 + seconds(27));
    CHECK(refresh_due(t0 + minutes(600), t0) == t0 + minutes(595));
    CHECK(refresh_due(t0 + minutes(600), std::nullopt) == t0 + minutes(595));
}

}  // namespace test_login_token
