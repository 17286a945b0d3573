// Discovery documents, URLs and Cache-Control: the pure parts of discovery.
#include <catch2/catch.hpp>

#include "daemon/discovery/discovery_document.hpp"
#include "daemon/http/cache_control.hpp"
#include "daemon/http/url.hpp"
#include "proto/services.hpp"

namespace test_discovery_document {

using namespace hostkeeper;
using namespace std::chrono_literals;
using daemon::discovery::parse_discovery_document;
using proto::Json;

namespace {
const std::string kBase = "https://example.com/.well-known/terraform.json";
}

TEST_CASE("media type: application/json in any case, parameters allowed", "[daemon][discovery]") {
    CHECK(daemon::http::is_json_media_type("application/json"));
    CHECK(daemon::http::is_json_media_type("Application/JSON; charset=utf-8"));
    CHECK(daemon::http::is_json_media_type(" application/json ;charset=\"utf-8\""));
    CHECK_FALSE(daemon::http::is_json_media_type("text/html"));
    CHECK_FALSE(daemon::http::is_json_media_type("application/json-seq"));
    CHECK_FALSE(daemon::http::is_json_media_type("application/problem+json"));
    CHECK_FALSE(daemon::http::is_json_media_type(""));
}

TEST_CASE("service URLs are made absolute against the final URL", "[daemon][discovery]") {
    const auto s = parse_discovery_document(
        R"({"modules.v1":"/v1/modules/","providers.v1":"https://other.example/p/","tfe.v2":"api/v2/",)"
        R"("thing.v1":"//cdn.example/x"})",
        "https://final.example:8443/a/b/terraform.json");
    CHECK(s.services.at("modules.v1") == "https://final.example:8443/v1/modules/");
    CHECK(s.services.at("providers.v1") == "https://other.example/p/");
    CHECK(s.services.at("tfe.v2") == "https://final.example:8443/a/b/api/v2/");
    CHECK(s.services.at("thing.v1") == "https://cdn.example/x");
    CHECK(s.invalid.empty());
}

TEST_CASE("login.v1 is an object whose authz and token URLs are resolved", "[daemon][discovery]") {
    const auto s = parse_discovery_document(
        R"({"login.v1":{"client":"terraform-cli","grant_types":["authz_code"],"authz":"/oauth/authorization",)"
        R"("token":"https://auth.example/token","ports":[10000,10010]}})",
        kBase);
    const Json& login = s.services.at("login.v1");
    CHECK(login.at("authz") == "https://example.com/oauth/authorization");
    CHECK(login.at("token") == "https://auth.example/token");
    CHECK(login.at("client") == "terraform-cli");
    CHECK(login.at("ports") == Json::array({10000, 10010}));
}

TEST_CASE("unusable services are listed as invalid, the rest kept", "[daemon][discovery]") {
    const auto s = parse_discovery_document(
        R"({"modules.v1":"ftp://example.com/m/","providers.v1":"https://user:pw@example.com/p/",)"
        R"("state.v1":42,"login.v1":"https://example.com/login","good.v1":"/ok/","not-a-service":"/x/",)"
        R"("also.vX":"/y/"})",
        kBase);
    CHECK(s.services.size() == 1);
    CHECK(s.services.at("good.v1") == "https://example.com/ok/");
    REQUIRE(s.invalid.size() == 4);
    CHECK_THAT(s.invalid.at("modules.v1").get<std::string>(),
               Catch::Contains("only http and https"));
    CHECK_THAT(s.invalid.at("providers.v1").get<std::string>(), Catch::Contains("user:password"));
    CHECK_THAT(s.invalid.at("state.v1").get<std::string>(),
               Catch::Contains("must be a URL string"));
    CHECK_THAT(s.invalid.at("login.v1").get<std::string>(), Catch::Contains("must be an object"));
}

TEST_CASE("a document must be a JSON object", "[daemon][discovery]") {
    CHECK_THROWS_WITH(parse_discovery_document("[1,2]", kBase),
                      Catch::Contains("JSON array, not a JSON object"));
    CHECK_THROWS_WITH(parse_discovery_document("{\"a\":", kBase),
                      Catch::Contains("not valid JSON"));
    CHECK_THROWS_WITH(parse_discovery_document("", kBase), Catch::Contains("not valid JSON"));
    CHECK(parse_discovery_document("{}", kBase).services.empty());
}

TEST_CASE("service ids and the other versions of a service", "[proto][discovery]") {
    CHECK(proto::is_service_id("modules.v1"));
    CHECK(proto::is_service_id("tfe.v2.1"));  // Terraform's remote backend asks for it
    CHECK(proto::is_service_id("tfe.v2.2"));
    CHECK_FALSE(proto::is_service_id("tfe.v2."));
    CHECK_FALSE(proto::is_service_id("tfe.v2..1"));
    CHECK_FALSE(proto::is_service_id("tfe.v.1"));
    CHECK(proto::is_service_id("login.v10"));
    CHECK_FALSE(proto::is_service_id("modules"));
    CHECK_FALSE(proto::is_service_id("modules.v"));
    CHECK_FALSE(proto::is_service_id(".v1"));
    CHECK_FALSE(proto::is_service_id("mod ules.v1"));
    const Json services = {
        {"modules.v1", "a"}, {"modules.v3", "b"}, {"modulesx.v1", "c"}, {"providers.v1", "d"}};
    CHECK(proto::other_versions(services, "modules.v2") ==
          std::vector<std::string>{"modules.v1", "modules.v3"});
    CHECK(proto::other_versions(services, "modules.v1") == std::vector<std::string>{"modules.v3"});
    CHECK(proto::other_versions(services, "state.v1").empty());
}

TEST_CASE("URLs through libcurl's URL API", "[daemon][url]") {
    CHECK(daemon::http::resolve_url(kBase, "../x/") == "https://example.com/x/");
    CHECK(daemon::http::resolve_url(kBase, "https://b.example/y") == "https://b.example/y");
    CHECK_THROWS_AS(daemon::http::resolve_url(kBase, "https://exa mple.com/"),
                    daemon::http::UrlError);
    CHECK(daemon::http::same_origin("https://a.example/x", "https://A.example:443/y"));
    CHECK_FALSE(daemon::http::same_origin("https://a.example/x", "https://a.example:8443/x"));
    CHECK_FALSE(daemon::http::same_origin("https://a.example/x", "http://a.example/x"));
    CHECK_FALSE(daemon::http::same_origin("https://a.example/x", "https://b.a.example/x"));
    CHECK(daemon::http::parse_url("https://u:p@a.example/").has_credentials);
    CHECK_FALSE(daemon::http::parse_url("https://a.example/").has_credentials);
}

TEST_CASE("Cache-Control: max-age, no-store, no-cache", "[daemon][cache-control]") {
    using daemon::http::freshness;
    using daemon::http::parse_cache_control;
    auto d = parse_cache_control({"public, max-age=120"});
    CHECK(d.max_age == 120s);
    CHECK_FALSE(d.no_store);
    CHECK(parse_cache_control({"no-store"}).no_store);
    CHECK(parse_cache_control({"max-age=60", "No-Store"}).no_store);
    CHECK(parse_cache_control({"max-age=60, max-age=30"}).max_age == 30s);
    CHECK(parse_cache_control({"max-age=\"45\""}).max_age == 45s);
    CHECK_FALSE(parse_cache_control({"max-age=abc"}).max_age.has_value());
    CHECK_FALSE(parse_cache_control({"private=\"a, max-age=5\""}).max_age.has_value());
    CHECK(parse_cache_control({"max-age=99999999999999999999"}).max_age ==
          std::chrono::seconds(1LL << 31));
    // fallback 900, bounds [60, 86400]
    CHECK(freshness({}, std::nullopt, 900s, 60s, 86400s) == 900s);
    CHECK(freshness(parse_cache_control({"max-age=120"}), std::nullopt, 900s, 60s, 86400s) == 120s);
    CHECK(freshness(parse_cache_control({"max-age=120"}), 100, 900s, 60s, 86400s) == 60s);
    CHECK(freshness(parse_cache_control({"max-age=120"}), 30, 900s, 0s, 86400s) == 90s);
    CHECK(freshness(parse_cache_control({"max-age=10"}), std::nullopt, 900s, 60s, 86400s) == 60s);
    CHECK(freshness(parse_cache_control({"max-age=999999"}), std::nullopt, 900s, 60s, 86400s) ==
          86400s);
    CHECK(freshness(parse_cache_control({"no-cache"}), std::nullopt, 900s, 0s, 86400s) == 0s);
}

}  // namespace test_discovery_document
