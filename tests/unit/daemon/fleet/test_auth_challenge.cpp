// WWW-Authenticate challenges of an OCI registry's 401.
#include <catch2/catch.hpp>
#include <string>
#include <vector>

#include "daemon/fleet/auth_challenge.hpp"

namespace test_auth_challenge {

using namespace hostkeeper::daemon::fleet;
using Catch::Matchers::Contains;

TEST_CASE("a registry's Bearer challenge gives the token service, service and scope", "[fleet]") {
    const auto challenges =
        parse_challenges({R"(Bearer realm="https://auth.example/token",service="registry.example",)"
                          R"(scope="repository:fleet/providers/x:pull,push")"});
    REQUIRE(challenges.size() == 1);
    CHECK(challenges[0].scheme == "bearer");
    const auto bearer = bearer_challenge(challenges);
    REQUIRE(bearer);
    CHECK(bearer->realm == "https://auth.example/token");
    CHECK(bearer->service == "registry.example");
    CHECK(bearer->scope == "repository:fleet/providers/x:pull,push");
    CHECK_FALSE(asks_basic(challenges));
}

TEST_CASE("several challenges, in one header or several, in any case", "[fleet]") {
    const auto challenges = parse_challenges(
        {R"(Newauth realm="apps", type=1, title="Login to \"apps\"", Basic realm="simple")",
         "NEGOTIATE abc==", R"(bearer Realm="https://a.example/t" , Service = "s")"});
    REQUIRE(challenges.size() == 4);
    CHECK(challenges[0].scheme == "newauth");
    CHECK(challenges[0].params.at("title") == "Login to \"apps\"");
    CHECK(challenges[0].params.at("type") == "1");
    CHECK(challenges[1].scheme == "basic");
    CHECK(challenges[1].params.at("realm") == "simple");
    CHECK(challenges[2].scheme == "negotiate");
    CHECK(challenges[2].token68 == "abc==");
    CHECK(asks_basic(challenges));
    const auto bearer = bearer_challenge(challenges);
    REQUIRE(bearer);
    CHECK(bearer->realm == "https://a.example/t");
    CHECK(bearer->service == "s");
    CHECK(bearer->scope.empty());
}

TEST_CASE("a challenge with no parameters, and a Bearer without a realm", "[fleet]") {
    const auto challenges = parse_challenges({"Basic", "Bearer error=\"invalid_token\""});
    REQUIRE(challenges.size() == 2);
    CHECK(challenges[0].params.empty());
    CHECK(asks_basic(challenges));
    CHECK_FALSE(bearer_challenge(challenges));
    CHECK(parse_challenges({"", " , "}).empty());
}

TEST_CASE("headers that are not challenges are refused without quoting them", "[fleet]") {
    CHECK_THROWS_WITH(parse_challenges({R"(Bearer realm="open)"}), Contains("not closed"));
    CHECK_THROWS_WITH(parse_challenges({"Bearer realm=\"a\x01\""}), Contains("control character"));
    CHECK_THROWS_WITH(parse_challenges({R"(Bearer realm="a" service="b")"}),
                      Contains("after a parameter"));
    CHECK_THROWS_WITH(parse_challenges({"=x"}), Contains("scheme"));
    CHECK_THROWS_WITH(parse_challenges({R"(Bearer "x")"}), Contains("unexpected text"));
    CHECK_THROWS_WITH(parse_challenges({"Bearer\"x\""}), Contains("after a scheme"));
    std::string many;
    for (int i = 0; i < 20; ++i) many += "Basic, ";
    CHECK_THROWS_WITH(parse_challenges({many}), Contains("over 16 challenges"));
    std::string params = "Bearer ";
    for (int i = 0; i < 40; ++i) params += "p" + std::to_string(i) + "=1,";
    CHECK_THROWS_WITH(parse_challenges({params}), Contains("over 32 parameters"));
    CHECK_THROWS_WITH(parse_challenges({std::string(20000, 'a')}), Contains("bytes"));
}

}  // namespace test_auth_challenge
