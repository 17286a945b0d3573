// The documents of token rotation (authentication_tokens.hpp): the create
// request, the created token, JSON:API errors, the credentials stored after,
// RFC 3339 expiries and when automatic rotation is due.
#include <catch2/catch.hpp>
#include <ctime>

#include "daemon/credentials/token_expiry.hpp"
#include "daemon/discovery/account_details.hpp"
#include "daemon/discovery/authentication_tokens.hpp"
#include "daemon/discovery/auto_rotation.hpp"
#include "proto/json.hpp"

namespace test_authentication_tokens {

using namespace hostkeeper;
using namespace daemon::discovery;
using proto::Json;

TEST_CASE("the create request is a JSON:API document with description and expiry",
          "[daemon][discovery]") {
    const auto when = std::chrono::system_clock::from_time_t(1798675200);  // 2026-12-31
    const Json body = Json::parse(token_request_body("hostkeeper on box", when));
    CHECK(body.at("data").at("type") == "authentication-tokens");
    CHECK(body.at("data").at("attributes").at("description") == "hostkeeper on box");
    CHECK(body.at("data").at("attributes").at("expired-at") == "2026-12-31T00:00:00Z");
}

TEST_CASE("a created token: id, token and expiry, or an error that quotes nothing",
          "[daemon][discovery]") {
    const CreatedToken t = read_created_token(
        R"({"data":{"id":"at-1","type":"authentication-tokens",)"
        R"("attributes":{"token":"s3cret","expired-at":"2027-01-01T00:00:00.000Z"}}})");
    CHECK(t.id == "at-1");
    CHECK(t.token.view() == "s3cret");
    CHECK(t.expired_at == "2027-01-01T00:00:00.000Z");
    CHECK(read_created_token(R"({"data":{"id":"at-2","attributes":{"token":"x"}}})")
              .expired_at.empty());
    for (const char* bad : {"", "[]", "not json s3cret", R"({"data":{"id":"at-3"}})",
                            R"({"data":{"attributes":{"token":"s3cret"}}})",
                            R"({"data":{"id":"at-4","attributes":{"token":""}}})",
                            R"({"data":{"id":7,"attributes":{"token":"s3cret"}}})"}) {
        CAPTURE(bad);
        try {
            (void)read_created_token(bad);
            FAIL("read");
        } catch (const std::runtime_error& e) {
            CHECK(std::string(e.what()).find("s3cret") == std::string::npos);
        }
    }
}

TEST_CASE("a JSON:API error's detail, else its title, one bounded line", "[daemon][discovery]") {
    CHECK(
        json_api_error(R"({"errors":[{"status":"422","title":"invalid","detail":"too long"}]})") ==
        "too long");
    CHECK(json_api_error(R"({"errors":[{"status":"401","title":"unauthorized"}]})") ==
          "unauthorized");
    CHECK(json_api_error(R"({"errors":[{"detail":"a\nb"}]})") == "a b");
    CHECK(json_api_error(R"({"errors":[]})").empty());
    CHECK(json_api_error("<html>").empty());
    CHECK(json_api_error(R"({"errors":[{"detail":")" + std::string(500, 'x') + "\"}]}").size() ==
          200);
    // 199 bytes, then a two-byte character that would straddle the limit.
    const std::string cut =
        json_api_error(R"({"errors":[{"detail":")" + std::string(199, 'x') + "\u00e9\u00e9\"}]}");
    CHECK(cut == std::string(199, 'x'));
}

TEST_CASE("the stored object after a rotation keeps other members", "[daemon][discovery]") {
    const proto::Secret old(R"({"token":"old","token_id":"at-0","note":"kept"})");
    CHECK(stored_token_id(old) == "at-0");
    CHECK(stored_token_id(proto::Secret(R"({"token":"old"})")).empty());
    CreatedToken created{"at-1", proto::Secret("new"), ""};
    const Json now = Json::parse(rotated_credentials(old, created, "2027-01-01T00:00:00Z").view());
    CHECK(now.size() == 5);
    CHECK(now.at("token") == "new");
    // When hostkeeper made it: the expiry warnings' measure of its lifetime.
    CHECK(daemon::credentials::parse_rfc3339(now.at("rotated_at").get<std::string>()));
    CHECK(now.at("token_id") == "at-1");
    CHECK(now.at("expires_at") == "2027-01-01T00:00:00Z");
    CHECK(now.at("note") == "kept");
    CHECK(account_user_id(R"({"data":{"id":"user-1","type":"users"}})") == "user-1");
    CHECK(account_user_id(R"({"data":{"id":1}})").empty());
}

TEST_CASE("a stored expiry is read as RFC 3339, or not at all", "[daemon][discovery]") {
    const auto at = [](std::time_t t) { return std::chrono::system_clock::from_time_t(t); };
    CHECK(stored_expiry(proto::Secret(R"({"token":"t","expires_at":"2026-12-31T00:00:00Z"})")) ==
          at(1798675200));
    CHECK_FALSE(stored_expiry(proto::Secret(R"({"token":"t"})")).has_value());
    CHECK_FALSE(stored_expiry(proto::Secret(R"({"token":"t","expires_at":5})")).has_value());
}

TEST_CASE("automatic rotation is due a tenth of the lifetime before expiry, 3 days at most",
          "[daemon][discovery]") {
    using std::chrono::hours;
    const auto now = std::chrono::system_clock::from_time_t(1798675200);
    CHECK(rotation_margin(hours(24 * 30)) == hours(72));
    CHECK(rotation_margin(hours(240)) == hours(24));
    CHECK(rotation_margin(std::chrono::seconds(60)) == std::chrono::seconds(6));
    CHECK(rotation_due(std::nullopt, hours(240), now));
    CHECK_FALSE(rotation_due(now + hours(25), hours(240), now));
    CHECK(rotation_due(now + hours(24), hours(240), now));
    CHECK(rotation_due(now - hours(1), hours(240), now));
    CHECK_FALSE(rotation_due(now + hours(73), hours(24 * 365), now));
    CHECK(rotation_due(now + hours(71), hours(24 * 365), now));
}

TEST_CASE("a token list: each token's id and expiry, and how many there are",
          "[daemon][discovery]") {
    const TokenList list = read_token_list(
        R"({"data":[{"id":"at-1","type":"authentication-tokens","attributes":{)"
        R"("created-at":"2026-01-01T00:00:00.000Z","last-used-at":null,"description":"ci",)"
        R"("token":null,"expired-at":"2026-12-31T00:00:00.000Z"}},)"
        R"({"id":"at-2","attributes":{"expired-at":null}},{"id":"at-3"}],)"
        R"("meta":{"pagination":{"current-page":1,"total-count":3}}})");
    REQUIRE(list.tokens.size() == 3);
    CHECK(list.total == 3);
    CHECK(list.tokens[0].id == "at-1");
    REQUIRE(list.tokens[0].expires.has_value());
    CHECK(*list.tokens[0].expires == std::chrono::system_clock::from_time_t(1798675200));
    CHECK_FALSE(list.tokens[1].expires.has_value());  // null: never expires
    CHECK_FALSE(list.tokens[2].expires.has_value());

    CHECK(read_token_list(R"({"data":[]})").total == 0);  // no tokens: an empty document
    CHECK(read_token_list(R"({"data":[{"id":"a"}],"meta":{"pagination":{"total-count":40}}})")
              .total == 40);  // more on other pages
}

TEST_CASE("a bad token list is an error that says what, never quoting the body",
          "[daemon][discovery]") {
    CHECK_THROWS_WITH(read_token_list("secret-ish <html>"), "the token list is not JSON");
    CHECK_THROWS_WITH(read_token_list(R"({"data":{"id":"at-1"}})"),
                      Catch::Contains("no \"data\" array"));
    CHECK_THROWS_WITH(read_token_list(R"([1])"), Catch::Contains("no \"data\" array"));
    CHECK_THROWS_WITH(read_token_list(R"({"data":[{"type":"authentication-tokens"}]})"),
                      Catch::Contains("has no id"));
    CHECK_THROWS_WITH(
        read_token_list(R"({"data":[{"id":"at-9","attributes":{"expired-at":"soon"}}]})"),
        Catch::Contains("at-9") && Catch::Contains("neither null nor RFC 3339") &&
            !Catch::Contains("soon"));
    CHECK_THROWS_WITH(read_token_list(R"({"data":[{"id":"at-9","attributes":{"expired-at":7}}]})"),
                      Catch::Contains("neither null nor RFC 3339"));
}

TEST_CASE("the stored token's expiry: by its known id, else the only token, else unknown",
          "[daemon][discovery]") {
    const auto at = [](std::time_t t) { return std::chrono::system_clock::from_time_t(t); };
    TokenList one{{{"at-1", at(1798675200)}}, 1};
    ListedExpiry found = expiry_in_list(one, "");
    CHECK(found.found);
    CHECK(found.expires == at(1798675200));

    TokenList several{{{"at-1", at(1798675200)}, {"at-2", at(1800000000)}, {"at-3", std::nullopt}},
                      3};
    found = expiry_in_list(several, "at-2");
    CHECK(found.found);
    CHECK(found.expires == at(1800000000));
    found = expiry_in_list(several, "at-3");
    CHECK(found.found);
    CHECK_FALSE(found.expires.has_value());  // never expires

    ListedExpiry unknown = expiry_in_list(several, "");
    CHECK_FALSE(unknown.found);
    CHECK(unknown.why == "3 tokens for this user");
    unknown = expiry_in_list(several, "at-gone");
    CHECK_FALSE(unknown.found);
    CHECK(unknown.why == "3 tokens for this user, none of them at-gone");
    // One on this page of many: not the only one.
    CHECK_FALSE(expiry_in_list(TokenList{{{"at-1", std::nullopt}}, 25}, "").found);
    CHECK(expiry_in_list(TokenList{{}, 0}, "").why == "0 tokens for this user");
}

}  // namespace test_authentication_tokens
