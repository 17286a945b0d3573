// The discovery service over a scripted HTTP client and a fake clock: the
// cache's rules, single flight, redirects and where the token goes. The
// real libcurl client against a real HTTPS server is in the integration tests.
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/thread_pool.hpp>
#include <catch2/catch.hpp>
#include <chrono>
#include <utility>

#include "daemon/discovery/discovery_service.hpp"
#include "fake_http_client.hpp"
#include "memory_keyring.hpp"
#include "run_awaitable.hpp"

namespace test_discovery_service {

using namespace hostkeeper;
using namespace std::chrono_literals;
namespace asio = boost::asio;
using daemon::discovery::DiscoveryAnswer;
using daemon::discovery::DiscoveryError;
using daemon::discovery::DiscoverySource;
using daemon::http::HttpResponse;
using test::FakeHttpClient;
using steady = std::chrono::steady_clock;

namespace {

const std::string kUrl = "https://h.example/.well-known/terraform.json";

daemon::discovery::DiscoveryOptions short_ttls() {
    daemon::discovery::DiscoveryOptions o;
    o.ttl = 100s;
    o.min_ttl = 0s;
    o.max_ttl = 1000s;
    o.negative_ttl = 50s;
    o.error_ttl = 10s;
    o.max_retry_after = 60s;
    o.stale_if_error = 300s;
    return o;
}

struct Fixture {
    explicit Fixture(daemon::discovery::DiscoveryOptions options = short_ttls())
        : credentials(io.get_executor(), pool.get_executor(), keyring, {}, [this] { return now; }),
          discovery(io.get_executor(), http, credentials.tokens(), std::move(options),
                    [this] { return now; }) {}
    ~Fixture() {
        discovery.stop();
        credentials.stop();
        pool.join();
    }

    DiscoveryAnswer discover(const std::string& host = "h.example", bool refresh = false) {
        return test::run_to_completion(io, discovery.discover(host, refresh));
    }
    DiscoveryError discover_error(const std::string& host = "h.example") {
        try {
            discover(host);
        } catch (const DiscoveryError& e) {
            return e;
        }
        FAIL("discovery of " << host << " did not fail");
        throw std::logic_error("unreachable");
    }

    steady::time_point now = steady::time_point{} + 1000h;
    asio::io_context io;
    asio::thread_pool pool{1};
    test::MemoryKeyring keyring;
    daemon::credentials::CredentialService credentials;
    FakeHttpClient http{io.get_executor()};
    daemon::discovery::DiscoveryService discovery;
};

}  // namespace

TEST_CASE("a fetched document is served from the cache until it expires", "[daemon][discovery]") {
    Fixture f;
    f.http.routes[kUrl] = [] { return FakeHttpClient::json(R"({"modules.v1":"/m/"})"); };
    DiscoveryAnswer a = f.discover();
    CHECK(a.source == DiscoverySource::network);
    CHECK(a.services().services.at("modules.v1") == "https://h.example/m/");
    CHECK(a.expires_in == 100s);
    f.now += 99s;
    a = f.discover();
    CHECK(a.source == DiscoverySource::cache);
    CHECK(a.age == 99s);
    CHECK(a.expires_in == 1s);
    CHECK(f.http.requests.size() == 1);
    f.now += 1s;
    CHECK(f.discover().source == DiscoverySource::network);
    CHECK(f.http.requests.size() == 2);
    const auto s = f.discovery.stats();
    CHECK(s.hits == 1);
    CHECK(s.misses == 2);
    CHECK(s.upstream_requests == 2);
    CHECK(s.positive == 1);
}

TEST_CASE("refresh skips a fresh cache entry", "[daemon][discovery]") {
    Fixture f;
    f.http.routes[kUrl] = [] { return FakeHttpClient::json("{}"); };
    f.discover();
    CHECK(f.discover("h.example", true).source == DiscoverySource::network);
    CHECK(f.http.requests.size() == 2);
}

TEST_CASE("max-age sets the freshness within bounds; no-store is not kept", "[daemon][discovery]") {
    Fixture f;
    f.http.routes[kUrl] = [] { return FakeHttpClient::json("{}", 200, {"max-age=7"}); };
    CHECK(f.discover().expires_in == 7s);
    f.now += 7s;
    CHECK(f.discover().source == DiscoverySource::network);
    f.http.routes[kUrl] = [] { return FakeHttpClient::json("{}", 200, {"max-age=5000"}); };
    CHECK(f.discover("h.example", true).expires_in == 1000s);
    f.http.routes[kUrl] = [] { return FakeHttpClient::json("{}", 200, {"no-store"}); };
    CHECK(f.discover("h.example", true).source == DiscoverySource::network);
    CHECK(f.discover().source == DiscoverySource::network);
    CHECK(f.discovery.stats().entries == 0);
}

TEST_CASE("404 is an empty answer, cached for negative_ttl", "[daemon][discovery]") {
    Fixture f;
    f.http.routes[kUrl] = [] { return FakeHttpClient::json("not found", 404); };
    DiscoveryAnswer a = f.discover();
    CHECK(a.services().services.empty());
    CHECK(a.expires_in == 50s);
    CHECK(f.discovery.stats().empty == 1);
    f.now += 49s;
    CHECK(f.discover().source == DiscoverySource::cache);
    f.now += 1s;
    CHECK(f.discover().source == DiscoverySource::network);
}

TEST_CASE("failures are remembered for error_ttl, or as Retry-After asks", "[daemon][discovery]") {
    Fixture f;
    f.http.routes[kUrl] = [] { return FakeHttpClient::json("{}", 500); };
    DiscoveryError e = f.discover_error();
    CHECK_THAT(e.what(), Catch::Contains(kUrl + ": HTTP status 500"));
    CHECK_FALSE(e.cached());
    CHECK(e.retry_in() == 10s);
    f.now += 9s;
    e = f.discover_error();
    CHECK(e.cached());
    CHECK(e.retry_in() == 1s);
    CHECK(f.http.requests.size() == 1);
    CHECK(f.discovery.stats().hits == 0);  // hits are fresh answers only
    f.now += 1s;
    HttpResponse busy = FakeHttpClient::json("{}", 503);
    busy.retry_after = 40;
    f.http.routes[kUrl] = [busy] { return busy; };
    CHECK(f.discover_error().retry_in() == 40s);
    f.now += 39s;
    CHECK(f.discover_error().cached());
    busy.retry_after = 100000;  // capped by max_retry_after
    f.http.routes[kUrl] = [busy] { return busy; };
    f.now += 1s;
    CHECK(f.discover_error().retry_in() == 60s);
    CHECK(f.discovery.stats().errors == 1);
}

TEST_CASE("stale-if-error: the last good answer outlives a failing server, up to a limit",
          "[daemon][discovery]") {
    Fixture f;
    f.http.routes[kUrl] = [] { return FakeHttpClient::json(R"({"modules.v1":"/m/"})"); };
    f.discover();
    f.now += 100s;
    f.http.routes[kUrl] = [] { return FakeHttpClient::json("<html>", 502); };
    DiscoveryAnswer a = f.discover();
    CHECK(a.source == DiscoverySource::stale);
    CHECK(a.services().services.at("modules.v1") == "https://h.example/m/");
    CHECK_THAT(a.error, Catch::Contains("HTTP status 502"));
    CHECK(a.expires_in == 0s);
    // Within error_ttl the server is not asked again.
    f.now += 5s;
    CHECK(f.discover().source == DiscoverySource::stale);
    CHECK(f.http.requests.size() == 2);
    // Past freshness + stale_if_error: the error itself.
    f.now = f.now - 105s + 100s + 300s;
    CHECK_FALSE(f.discover_error().cached());
    CHECK(f.discovery.stats().stale == 2);
}

TEST_CASE(
    "a locked keyring: discovery goes without a token, and a 401, 403 or 404 says why, uncached",
    "[daemon][discovery]") {
    for (const long status : {401L, 403L, 404L}) {
        INFO("HTTP " << status);
        Fixture f;
        f.keyring.fail_with(proto::ErrorCode::keyring_locked);
        f.http.routes[kUrl] = [status] { return FakeHttpClient::json("{}", status); };
        const DiscoveryError e = f.discover_error();
        CHECK_THAT(e.what(), Catch::Contains(kUrl + ": HTTP status " + std::to_string(status) +
                                             " to a request without credentials"));
        CHECK_THAT(e.what(), Catch::Contains("could not be read from the keyring"));
        CHECK(f.http.requests.at(0).bearer == std::nullopt);
        CHECK(f.discovery.stats().empty == 0);  // not "the host offers no services"
        // Once the keyring answers, so does the host.
        f.keyring.fail_with(std::nullopt);
        f.keyring.put("h.example", R"({"token":"T"})");
        f.credentials.flush();
        f.now += 11s;  // past error_ttl
        f.http.routes[kUrl] = [] { return FakeHttpClient::json(R"({"modules.v1":"/m/"})"); };
        const DiscoveryAnswer a = f.discover();
        CHECK(a.source == DiscoverySource::network);
        CHECK(a.services().services.at("modules.v1") == "https://h.example/m/");
        CHECK(f.http.requests.back().bearer == std::optional<std::string>("T"));
    }
}

TEST_CASE("a locked keyring's 401 is not a refusal: the last good answer stands in",
          "[daemon][discovery]") {
    Fixture f;
    f.http.routes[kUrl] = [] { return FakeHttpClient::json(R"({"modules.v1":"/m/"})"); };
    f.discover();
    f.now += 100s;
    f.keyring.fail_with(proto::ErrorCode::keyring_locked);
    f.http.routes[kUrl] = [] { return FakeHttpClient::json("{}", 401); };
    const DiscoveryAnswer a = f.discover();
    CHECK(a.source == DiscoverySource::stale);
    CHECK(a.services().services.at("modules.v1") == "https://h.example/m/");
    CHECK_THAT(a.error, Catch::Contains("could not be read from the keyring"));
}

TEST_CASE("concurrent lookups of a cold host share one request", "[daemon][discovery]") {
    Fixture f;
    f.http.routes[kUrl] = [] { return FakeHttpClient::json(R"({"modules.v1":"/m/"})"); };
    f.http.hold();
    int done = 0;
    int ok = 0;
    for (int i = 0; i < 50; ++i) {
        asio::co_spawn(f.io, f.discovery.discover("h.example", false),
                       [&](std::exception_ptr e, const DiscoveryAnswer& a) {
                           ++done;
                           if (!e && a.services().services.contains("modules.v1")) ++ok;
                       });
    }
    f.io.restart();
    // The keyring lookup for the token runs on the worker thread first.
    while (f.http.requests.empty() && f.io.run_one() > 0) {
    }
    f.io.poll();
    CHECK(f.http.requests.size() == 1);
    CHECK(f.discovery.stats().in_flight == 1);
    f.http.release();
    while (done < 50 && f.io.run_one() > 0) {
    }
    CHECK(ok == 50);
    CHECK(f.http.requests.size() == 1);
}

TEST_CASE("redirects: followed up to 3, the token only to its own origin", "[daemon][discovery]") {
    Fixture f;
    f.keyring.put("h.example", R"({"token":"sekrit"})");
    f.http.routes[kUrl] = [] { return FakeHttpClient::redirect("https://h.example/r1"); };
    f.http.routes["https://h.example/r1"] = [] {
        return FakeHttpClient::redirect("https://other.example/r2");
    };
    f.http.routes["https://other.example/r2"] = [] {
        return FakeHttpClient::redirect("https://h.example/r3");
    };
    f.http.routes["https://h.example/r3"] = [] {
        return FakeHttpClient::json(R"({"modules.v1":"m/"})");
    };
    const DiscoveryAnswer a = f.discover();
    CHECK(a.url() == "https://h.example/r3");
    CHECK(a.services().services.at("modules.v1") == "https://h.example/m/");
    REQUIRE(f.http.requests.size() == 4);
    CHECK(f.http.requests[0].bearer == "sekrit");
    CHECK(f.http.requests[1].bearer == "sekrit");
    CHECK_FALSE(f.http.requests[2].bearer.has_value());
    CHECK(f.http.requests[3].bearer == "sekrit");

    f.http.routes["https://h.example/r3"] = [] {
        return FakeHttpClient::redirect("https://h.example/r4");
    };
    f.http.routes["https://h.example/r4"] = [] { return FakeHttpClient::json("{}"); };
    f.discovery.flush();
    CHECK_THAT(f.discover_error().what(), Catch::Contains("more than 3 redirects"));
    CHECK(f.http.requests.size() == 8);  // the 4th redirect is not followed
}

TEST_CASE("a redirect loop and a redirect without Location are errors", "[daemon][discovery]") {
    Fixture f;
    f.http.routes[kUrl] = [] { return FakeHttpClient::redirect("https://h.example/a"); };
    f.http.routes["https://h.example/a"] = [] { return FakeHttpClient::redirect(kUrl); };
    CHECK_THAT(f.discover_error().what(), Catch::Contains("redirect loop"));
    f.http.routes["https://g.example/.well-known/terraform.json"] = [] {
        return FakeHttpClient::redirect("");
    };
    CHECK_THAT(f.discover_error("g.example").what(), Catch::Contains("without a Location"));
}

TEST_CASE("content type and body are checked", "[daemon][discovery]") {
    Fixture f;
    HttpResponse html = FakeHttpClient::json("{}");
    html.content_type = "text/html";
    f.http.routes[kUrl] = [html] { return html; };
    CHECK_THAT(f.discover_error().what(), Catch::Contains("\"text/html\", not application/json"));
    html.content_type = "";
    f.http.routes["https://g.example/.well-known/terraform.json"] = [html] { return html; };
    CHECK_THAT(f.discover_error("g.example").what(), Catch::Contains("no Content-Type"));
    f.http.routes["https://a.example/.well-known/terraform.json"] = [] {
        return FakeHttpClient::json("[]");
    };
    CHECK_THAT(f.discover_error("a.example").what(), Catch::Contains("not a JSON object"));
}

TEST_CASE("no credentials, no Authorization", "[daemon][discovery]") {
    Fixture f;
    f.http.routes[kUrl] = [] { return FakeHttpClient::json("{}"); };
    f.discover();
    REQUIRE(f.http.requests.size() == 1);
    CHECK_FALSE(f.http.requests[0].bearer.has_value());
}

TEST_CASE("forced services answer without the network", "[daemon][discovery]") {
    daemon::discovery::DiscoveryOptions options = short_ttls();
    options.forced["h.example"] = {{"modules.v1", "/forced/"},
                                   {"providers.v1", "https://p.example/v1/"}};
    Fixture f(options);
    const DiscoveryAnswer a = f.discover();
    CHECK(a.source == DiscoverySource::forced);
    CHECK(a.services().services.at("modules.v1") == "https://h.example/forced/");
    CHECK(a.services().services.at("providers.v1") == "https://p.example/v1/");
    CHECK_FALSE(a.expires_in.has_value());
    CHECK(f.http.requests.empty());
    CHECK(f.discovery.stats().forced == 1);
}

TEST_CASE("flush drops discovery entries", "[daemon][discovery]") {
    Fixture f;
    f.http.routes[kUrl] = [] { return FakeHttpClient::json("{}"); };
    f.discover();
    CHECK(f.discovery.flush("h.example") == 1);
    CHECK(f.discover().source == DiscoverySource::network);
    CHECK(f.discovery.flush() == 1);
    CHECK(f.discovery.stats().entries == 0);
}

}  // namespace test_discovery_service
