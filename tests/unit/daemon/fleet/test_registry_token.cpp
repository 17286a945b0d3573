// What an OCI registry's token service answers.
#include <catch2/catch.hpp>
#include <chrono>
#include <string>

#include "daemon/fleet/registry_token.hpp"

namespace test_registry_token {

using namespace hostkeeper::daemon::fleet;
using Catch::Matchers::Contains;
using std::chrono::seconds;

TEST_CASE("a token service's answer gives the token and how long it lasts", "[fleet]") {
    RegistryToken token = parse_registry_token(R"({"token":"eyJ.a.b","expires_in":300})");
    CHECK(token.token.view() == "eyJ.a.b");
    CHECK(token.expires_in == seconds(300));

    token = parse_registry_token(R"({"access_token":"opaque","issued_at":"2026-01-01T00:00:00Z"})");
    CHECK(token.token.view() == "opaque");
    CHECK(token.expires_in == kDefaultRegistryTokenLife);

    // "token" wins; lifetimes are kept within [60 s, 1 h].
    token = parse_registry_token(R"({"access_token":"b","token":"a","expires_in":5})");
    CHECK(token.token.view() == "a");
    CHECK(token.expires_in == seconds(60));
    CHECK(parse_registry_token(R"({"token":"a","expires_in":999999})").expires_in ==
          kMaxRegistryTokenLife);
}

TEST_CASE("an answer without a usable token says why, never quoting it", "[fleet]") {
    CHECK_THROWS_WITH(parse_registry_token("secret-ish"), Contains("not JSON"));
    CHECK_THROWS_WITH(parse_registry_token("[]"), Contains("not a JSON object"));
    CHECK_THROWS_WITH(parse_registry_token("{}"), Contains("holds no token"));
    CHECK_THROWS_WITH(parse_registry_token(R"({"token":""})"), Contains("is not a token"));
    CHECK_THROWS_WITH(parse_registry_token(R"({"token":"has space"})"), Contains("is not a token"));
    CHECK_THROWS_WITH(parse_registry_token(R"({"token":"a\nb"})"), Contains("is not a token"));
    CHECK_THROWS_WITH(parse_registry_token(R"({"token":42})"), Contains("is not a token"));
    CHECK_THROWS_WITH(parse_registry_token(R"({"token":"a","expires_in":"300"})"),
                      Contains("whole number"));
    CHECK_THROWS_WITH(parse_registry_token(R"({"token":"a","expires_in":1.5})"),
                      Contains("whole number"));
    CHECK_THROWS_WITH(parse_registry_token(std::string(kMaxRegistryTokenAnswer + 1, ' ')),
                      Contains("bytes"));
    CHECK_THROWS_WITH(parse_registry_token(R"({"a":[[[[[1]]]]],"token":"x"})"),
                      Contains("not JSON"));
    try {
        parse_registry_token(R"({"token":"has space in-it"})");
        FAIL("no error");
    } catch (const RegistryTokenError& e) {
        CHECK_THAT(e.what(), !Contains("in-it"));
    }
}

}  // namespace test_registry_token
