// The registry and network-mirror clients over a scripted HTTP client and a
// fake clock: the cache's rules, single flight, where each document is
// fetched from and where the token goes. The real libcurl client against a
// real HTTPS server is in the integration tests.
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/thread_pool.hpp>
#include <catch2/catch.hpp>
#include <chrono>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "daemon/discovery/discovery_service.hpp"
#include "daemon/handlers/replies.hpp"
#include "daemon/registry/mirror.hpp"
#include "daemon/registry/registry_service.hpp"
#include "fake_http_client.hpp"
#include "memory_keyring.hpp"
#include "proto/registry_address.hpp"
#include "proto/semver.hpp"
#include "run_awaitable.hpp"

namespace test_registry_service {

using namespace hostkeeper;
using namespace std::chrono_literals;
namespace asio = boost::asio;
using daemon::cache::AnswerSource;
using daemon::http::HttpResponse;
using daemon::registry::Mirror;
using daemon::registry::RegistryAnswer;
using daemon::registry::RegistryError;
using proto::Json;
using test::FakeHttpClient;
using steady = std::chrono::steady_clock;

namespace {

const std::string kDiscovery = "https://r.example/.well-known/terraform.json";
const std::string kModule = "r.example/acme/thing/aws";
const std::string kModuleVersions = "https://r.example/v1/modules/acme/thing/aws/versions";
const std::string kProvider = "r.example/acme/thing";
const std::string kProviderVersions = "https://r.example/v1/providers/acme/thing/versions";
const std::string kPackage = "https://r.example/v1/providers/acme/thing/1.0.0/download/linux/amd64";
const std::string kShasum = "5f9c7aa76b7c34d722fc9123208e26b22d60440cb47150dd04733b9b94f4541a";

std::string download_url(const std::string& version) {
    return "https://r.example/v1/modules/acme/thing/aws/" + version + "/download";
}

const std::string kModule2 = "r.example/acme/other/aws";
const std::string kModuleVersions2 = "https://r.example/v1/modules/acme/other/aws/versions";
const std::string kModuleVersionsBody =
    R"({"modules":[{"versions":[{"version":"1.0.0"},{"version":"1.1.0"}]}]})";
const std::string kProviderVersionsBody = R"({"versions":[{"version":"1.0.0","protocols":["5.0"],)"
                                          R"("platforms":[{"os":"linux","arch":"amd64"}]}]})";
const std::string kMirrorIndexBody = R"({"versions":{"1.0.0":{},"1.1.0":{}}})";
const std::string kMirrorVersionBody =
    R"({"archives":{"linux_amd64":{"url":"thing_1.0.0_linux_amd64.zip","hashes":["h1:abc="]}}})";

std::string package_body() {
    return Json{{"protocols", {"5.0"}},
                {"os", "linux"},
                {"arch", "amd64"},
                {"filename", "thing_1.0.0_linux_amd64.zip"},
                {"download_url", "thing_1.0.0_linux_amd64.zip"},
                {"shasum", kShasum}}
        .dump();
}

HttpResponse get_header(std::string location, long status) {
    HttpResponse r;
    r.status = status;
    r.terraform_get = std::move(location);
    return r;
}

daemon::registry::RegistryOptions short_ttls() {
    daemon::registry::RegistryOptions o;
    o.versions_ttl = 100s;
    o.download_ttl = 1000s;
    o.negative_ttl = 50s;
    o.error_ttl = 10s;
    o.max_retry_after = 60s;
    o.stale_if_error = 300s;
    return o;
}

// Discovery stays fresh through every test: only registry requests come and go.
daemon::discovery::DiscoveryOptions long_discovery() {
    daemon::discovery::DiscoveryOptions o;
    o.ttl = 1'000'000s;
    o.min_ttl = 0s;
    o.max_ttl = 1'000'000s;
    return o;
}

struct Fixture {
    explicit Fixture(daemon::registry::RegistryOptions options = short_ttls())
        : credentials(io.get_executor(), pool.get_executor(), keyring, {}, [this] { return now; }),
          discovery(io.get_executor(), http, credentials.tokens(), long_discovery(),
                    [this] { return now; }),
          registry(io.get_executor(), http, credentials.tokens(), discovery, std::move(options),
                   [this] { return now; }) {
        http.routes[kDiscovery] = [] {
            return FakeHttpClient::json(
                R"({"modules.v1":"/v1/modules/","providers.v1":"/v1/providers/"})");
        };
    }
    ~Fixture() {
        registry.stop();
        discovery.stop();
        credentials.stop();
        pool.join();
    }
    Fixture(const Fixture&) = delete;
    Fixture& operator=(const Fixture&) = delete;

    template <typename T>
    T run(asio::awaitable<T> work) {
        return test::run_to_completion(io, std::move(work));
    }

    // The exception of type E that `work` throws.
    template <typename E, typename T>
    E error_of(asio::awaitable<T> work) {
        try {
            run(std::move(work));
        } catch (const E& e) {
            return e;
        }
        FAIL("the request did not fail");
        throw std::logic_error("unreachable");
    }

    RegistryAnswer module_versions(const std::string& module = kModule, bool refresh = false) {
        return run(registry.module_versions(proto::parse_module_address(module), refresh));
    }
    RegistryAnswer module_download(const std::string& version, bool refresh = false) {
        return run(registry.module_download(proto::parse_module_address(kModule),
                                            proto::parse_semver(version), refresh));
    }
    RegistryAnswer provider_versions(std::optional<Mirror> mirror = std::nullopt,
                                     const std::string& provider = kProvider,
                                     bool refresh = false) {
        return run(registry.provider_versions(proto::parse_provider_address(provider),
                                              std::move(mirror), refresh));
    }
    RegistryAnswer provider_package(std::optional<Mirror> mirror = std::nullopt,
                                    const std::string& provider = kProvider, bool refresh = false) {
        return run(registry.provider_package(proto::parse_provider_address(provider),
                                             proto::parse_semver("1.0.0"), "linux_amd64",
                                             std::move(mirror), refresh));
    }

    std::vector<FakeHttpClient::Seen> requests_to(const std::string& url) const {
        std::vector<FakeHttpClient::Seen> out;
        for (const FakeHttpClient::Seen& seen : http.requests) {
            if (seen.url == url) out.push_back(seen);
        }
        return out;
    }
    std::size_t count(const std::string& url) const { return requests_to(url).size(); }

    steady::time_point now = steady::time_point{} + 1000h;
    asio::io_context io;
    asio::thread_pool pool{1};
    test::MemoryKeyring keyring;
    daemon::credentials::CredentialService credentials;
    FakeHttpClient http{io.get_executor()};
    daemon::discovery::DiscoveryService discovery;
    daemon::registry::RegistryService registry;
};

}  // namespace

// ---- freshness
// -----------------------------------------------------------------------------------------------------

TEST_CASE("version lists are served from the cache for versions_ttl", "[daemon][registry]") {
    Fixture f;
    f.http.routes[kModuleVersions] = [] { return FakeHttpClient::json(kModuleVersionsBody); };
    RegistryAnswer a = f.module_versions();
    CHECK(a.source == AnswerSource::network);
    CHECK(a.age == 0s);
    CHECK(a.expires_in == 100s);
    REQUIRE(a.document);
    CHECK(a.document->url == kModuleVersions);
    CHECK(a.document->body.at("versions") ==
          Json::array({{{"version", "1.1.0"}}, {{"version", "1.0.0"}}}));
    REQUIRE(a.document->versions.size() == 2);
    CHECK(a.document->versions[0].to_string() == "1.1.0");
    CHECK(daemon::handlers::reply::fields_of(*a.document)
              .rfind("\"url\":\"" + kModuleVersions + "\",", 0) == 0);

    f.now += 99s;
    a = f.module_versions();
    CHECK(a.source == AnswerSource::cache);
    CHECK(a.age == 99s);
    CHECK(a.expires_in == 1s);
    CHECK(f.count(kModuleVersions) == 1);

    f.now += 1s;
    a = f.module_versions();
    CHECK(a.source == AnswerSource::network);
    CHECK(a.expires_in == 100s);
    CHECK(f.count(kModuleVersions) == 2);
    CHECK(f.count(kDiscovery) == 1);
}

TEST_CASE("provider version lists are fresh for versions_ttl too", "[daemon][registry]") {
    Fixture f;
    f.http.routes[kProviderVersions] = [] { return FakeHttpClient::json(kProviderVersionsBody); };
    RegistryAnswer a = f.provider_versions();
    CHECK(a.source == AnswerSource::network);
    CHECK(a.expires_in == 100s);
    CHECK(a.document->body.at("versions")[0].at("platforms") == Json::array({"linux_amd64"}));
    f.now += 99s;
    CHECK(f.provider_versions().source == AnswerSource::cache);
    f.now += 1s;
    CHECK(f.provider_versions().source == AnswerSource::network);
    CHECK(f.count(kProviderVersions) == 2);
}

TEST_CASE("download locations and packages are fresh for download_ttl", "[daemon][registry]") {
    Fixture f;
    f.http.routes[download_url("1.0.0")] = [] {
        return get_header("git::https://g.example/thing.git?ref=v1.0.0", 204);
    };
    f.http.routes[kPackage] = [] { return FakeHttpClient::json(package_body()); };
    RegistryAnswer d = f.module_download("1.0.0");
    CHECK(d.source == AnswerSource::network);
    CHECK(d.expires_in == 1000s);
    RegistryAnswer p = f.provider_package();
    CHECK(p.source == AnswerSource::network);
    CHECK(p.expires_in == 1000s);

    f.now += 999s;
    d = f.module_download("1.0.0");
    CHECK(d.source == AnswerSource::cache);
    CHECK(d.age == 999s);
    CHECK(d.expires_in == 1s);
    CHECK(f.provider_package().source == AnswerSource::cache);
    CHECK(f.count(download_url("1.0.0")) == 1);
    CHECK(f.count(kPackage) == 1);

    f.now += 1s;
    CHECK(f.module_download("1.0.0").source == AnswerSource::network);
    CHECK(f.provider_package().source == AnswerSource::network);
    CHECK(f.count(download_url("1.0.0")) == 2);
    CHECK(f.count(kPackage) == 2);
}

TEST_CASE("refresh skips a fresh entry", "[daemon][registry]") {
    Fixture f;
    f.http.routes[kModuleVersions] = [] { return FakeHttpClient::json(kModuleVersionsBody); };
    f.module_versions();
    CHECK(f.module_versions(kModule, true).source == AnswerSource::network);
    CHECK(f.count(kModuleVersions) == 2);
}

TEST_CASE("max-age may shorten the freshness, never lengthen it; no-store is not kept",
          "[daemon][registry]") {
    Fixture f;
    f.http.routes[kModuleVersions] = [] {
        return FakeHttpClient::json(kModuleVersionsBody, 200, {"max-age=30"});
    };
    CHECK(f.module_versions().expires_in == 30s);
    f.now += 29s;
    CHECK(f.module_versions().source == AnswerSource::cache);
    f.now += 1s;
    CHECK(f.module_versions().source == AnswerSource::network);
    CHECK(f.count(kModuleVersions) == 2);

    f.http.routes[kModuleVersions] = [] {
        return FakeHttpClient::json(kModuleVersionsBody, 200, {"max-age=5000"});
    };
    CHECK(f.module_versions(kModule, true).expires_in == 100s);
    f.http.routes[kPackage] = [] {
        return FakeHttpClient::json(package_body(), 200, {"public, max-age=5000"});
    };
    CHECK(f.provider_package().expires_in == 1000s);
    f.http.routes[kPackage] = [] {
        return FakeHttpClient::json(package_body(), 200, {"max-age=60"});
    };
    CHECK(f.provider_package(std::nullopt, kProvider, true).expires_in == 60s);

    f.http.routes[kModuleVersions] = [] {
        return FakeHttpClient::json(kModuleVersionsBody, 200, {"no-store"});
    };
    CHECK(f.module_versions(kModule, true).source == AnswerSource::network);
    CHECK(f.module_versions().source == AnswerSource::network);
    CHECK(f.count(kModuleVersions) == 5);
    CHECK(f.registry.stats().entries == 1);  // the package only
}

// ---- failures
// ------------------------------------------------------------------------------------------------------

TEST_CASE("404 is not_found, remembered for negative_ttl", "[daemon][registry]") {
    Fixture f;
    f.http.routes[kModuleVersions] = [] {
        return FakeHttpClient::json("{\"errors\":[\"Not Found\"]}", 404);
    };
    proto::Error e = f.error_of<proto::Error>(
        f.registry.module_versions(proto::parse_module_address(kModule), false));
    CHECK(e.code() == proto::ErrorCode::not_found);
    CHECK_THAT(e.what(), Catch::Contains("r.example has no module acme/thing/aws"));
    CHECK_THAT(e.what(), Catch::Contains("HTTP status 404 from " + kModuleVersions));
    CHECK(f.registry.stats().empty == 1);

    f.now += 49s;
    e = f.error_of<proto::Error>(
        f.registry.module_versions(proto::parse_module_address(kModule), false));
    CHECK(e.code() == proto::ErrorCode::not_found);
    CHECK(f.count(kModuleVersions) == 1);

    f.now += 1s;
    f.http.routes[kModuleVersions] = [] { return FakeHttpClient::json(kModuleVersionsBody); };
    CHECK(f.module_versions().source == AnswerSource::network);
    CHECK(f.count(kModuleVersions) == 2);
}

TEST_CASE("a server error is registry_failed, remembered for error_ttl or as Retry-After asks",
          "[daemon][registry]") {
    Fixture f;
    f.http.routes[kModuleVersions] = [] { return FakeHttpClient::json("{}", 500); };
    const auto versions = [&f] {
        return f.registry.module_versions(proto::parse_module_address(kModule), false);
    };
    RegistryError e = f.error_of<RegistryError>(versions());
    CHECK(e.code() == proto::ErrorCode::registry_failed);
    CHECK_THAT(e.what(), Catch::Contains(kModuleVersions + ": HTTP status 500"));
    CHECK_FALSE(e.cached());
    CHECK(e.retry_in() == 10s);

    f.now += 9s;
    e = f.error_of<RegistryError>(versions());
    CHECK(e.cached());
    CHECK(e.retry_in() == 1s);
    CHECK(f.count(kModuleVersions) == 1);

    f.now += 1s;
    HttpResponse busy = FakeHttpClient::json("{}", 503);
    busy.retry_after = 40;
    f.http.routes[kModuleVersions] = [busy] { return busy; };
    e = f.error_of<RegistryError>(versions());
    CHECK_FALSE(e.cached());
    CHECK(e.retry_in() == 40s);
    CHECK(f.count(kModuleVersions) == 2);

    const auto s = f.registry.stats();
    CHECK(s.errors == 1);
    CHECK(s.upstream_failures == 2);
}

TEST_CASE("a document that is not JSON, or not what it should be, is registry_failed",
          "[daemon][registry]") {
    Fixture f;
    // A registry's document is read as JSON whatever its Content-Type says,
    // as Terraform's registry clients read it; HTML is not JSON.
    HttpResponse labelled = FakeHttpClient::json(kModuleVersionsBody);
    labelled.content_type = "binary/octet-stream";
    f.http.routes[kModuleVersions] = [labelled] { return labelled; };
    CHECK(f.module_versions().document->versions.size() == 2);
    HttpResponse html = FakeHttpClient::json("<html>login</html>");
    html.content_type = "text/html";
    f.http.routes[kModuleVersions2] = [html] { return html; };
    CHECK_THAT(f.error_of<RegistryError>(
                    f.registry.module_versions(proto::parse_module_address(kModule2), false))
                   .what(),
               Catch::Contains("not valid JSON"));
    f.http.routes[kProviderVersions] = [] { return FakeHttpClient::json(R"({"versions":{}})"); };
    CHECK_THAT(
        f
            .error_of<RegistryError>(f.registry.provider_versions(
                proto::parse_provider_address(kProvider), std::nullopt, false))
            .what(),
        Catch::Contains(kProviderVersions + ": \"versions\" is a JSON object, not an array"));
}

TEST_CASE("stale-if-error: the last good registry answer outlives a failing server, up to a limit",
          "[daemon][registry]") {
    Fixture f;
    f.http.routes[kModuleVersions] = [] { return FakeHttpClient::json(kModuleVersionsBody); };
    const RegistryAnswer good = f.module_versions();
    f.now += 100s;
    f.http.routes[kModuleVersions] = [] { return FakeHttpClient::json("<html>", 502); };
    RegistryAnswer a = f.module_versions();
    CHECK(a.source == AnswerSource::stale);
    CHECK(a.document == good.document);
    CHECK_THAT(a.error, Catch::Contains("HTTP status 502"));
    CHECK(a.age == 100s);
    CHECK(a.expires_in == 0s);

    // Within error_ttl the server is not asked again.
    f.now += 5s;
    a = f.module_versions();
    CHECK(a.source == AnswerSource::stale);
    CHECK_THAT(a.error, Catch::Contains("HTTP status 502"));
    CHECK(f.count(kModuleVersions) == 2);

    // A network failure is stale too.
    f.now += 5s;
    f.http.routes.erase(kModuleVersions);
    a = f.module_versions();
    CHECK(a.source == AnswerSource::stale);
    CHECK_THAT(a.error, Catch::Contains("no route in the test"));

    // Past freshness + stale_if_error: the error itself.
    f.now += 300s;
    const RegistryError e = f.error_of<RegistryError>(
        f.registry.module_versions(proto::parse_module_address(kModule), false));
    CHECK_FALSE(e.cached());
    CHECK(f.registry.stats().stale == 3);
}

TEST_CASE(
    "a modules.v1 URL without a trailing slash gets one, as in Terraform; providers.v1 does not",
    "[daemon][registry]") {
    Fixture f;
    f.http.routes["https://s.example/.well-known/terraform.json"] = [] {
        return FakeHttpClient::json(
            R"({"modules.v1":"/api/modules","providers.v1":"/api/providers"})");
    };
    f.http.routes["https://s.example/api/modules/a/b/c/versions"] = [] {
        return FakeHttpClient::json(kModuleVersionsBody);
    };
    f.http.routes["https://s.example/api/a/t/versions"] = [] {
        return FakeHttpClient::json(kProviderVersionsBody);
    };
    CHECK(f.module_versions("s.example/a/b/c").document->url ==
          "https://s.example/api/modules/a/b/c/versions");
    CHECK(f.run(f.registry.provider_versions(proto::parse_provider_address("s.example/a/t"),
                                             std::nullopt, false))
              .document->url == "https://s.example/api/a/t/versions");
}

TEST_CASE("a provider package for another platform than the one asked for is an error",
          "[daemon][registry]") {
    Fixture f;
    f.http.routes["https://r.example/v1/providers/acme/thing/1.0.0/download/linux/arm64"] = [] {
        return FakeHttpClient::json(package_body());  // says linux_amd64
    };
    const RegistryError e = f.error_of<RegistryError>(f.registry.provider_package(
        proto::parse_provider_address(kProvider), proto::parse_semver("1.0.0"), "linux_arm64",
        std::nullopt, false));
    CHECK_THAT(e.what(), Catch::Contains("a package for linux_amd64, not linux_arm64"));
}

TEST_CASE("a cached answer needs no discovery; a host down altogether still gets its stale answer",
          "[daemon][registry]") {
    Fixture f;
    f.http.routes[kModuleVersions] = [] { return FakeHttpClient::json(kModuleVersionsBody); };
    const RegistryAnswer good = f.module_versions();
    // The discovery document is forgotten: a fresh registry answer does not need it.
    f.discovery.flush();
    CHECK(f.module_versions().source == AnswerSource::cache);
    CHECK(f.count(kDiscovery) == 1);
    // Expired, and now the whole host is unreachable: discovery fails, the
    // registry's last good answer stands in, saying why.
    f.now += 100s;
    f.http.routes.clear();
    const RegistryAnswer stale = f.module_versions();
    CHECK(stale.source == AnswerSource::stale);
    CHECK(stale.document == good.document);
    CHECK_THAT(stale.error,
               Catch::Contains("discovery: https://r.example/.well-known/terraform.json"));
}

TEST_CASE("a locked keyring: the request goes without a token, and a 401 or 404 says why, uncached",
          "[daemon][registry]") {
    for (const long status : {401L, 404L}) {
        INFO("HTTP " << status);
        Fixture f;
        f.keyring.fail_with(proto::ErrorCode::keyring_locked);
        f.http.routes[kModuleVersions] = [status] { return FakeHttpClient::json("{}", status); };
        const RegistryError e = f.error_of<RegistryError>(
            f.registry.module_versions(proto::parse_module_address(kModule), false));
        CHECK_THAT(e.what(), Catch::Contains("could not be read from the keyring"));
        CHECK(f.requests_to(kModuleVersions).at(0).bearer == std::nullopt);
        // Not remembered as "no such module": once the keyring answers, so does the registry.
        f.keyring.fail_with(std::nullopt);
        f.keyring.put("r.example", R"({"token":"T"})");
        f.credentials.flush();
        f.now += 11s;  // past error_ttl
        f.http.routes[kModuleVersions] = [] { return FakeHttpClient::json(kModuleVersionsBody); };
        CHECK(f.module_versions().source == AnswerSource::network);
        CHECK(f.requests_to(kModuleVersions).back().bearer == std::optional<std::string>("T"));
    }
}

TEST_CASE("a refusal (401, 403, 410) is never answered with the last good answer",
          "[daemon][registry]") {
    for (const long status : {401L, 403L, 410L}) {
        INFO("HTTP " << status);
        Fixture f;
        f.http.routes[kModuleVersions] = [] { return FakeHttpClient::json(kModuleVersionsBody); };
        f.module_versions();
        f.now += 100s;
        f.http.routes[kModuleVersions] = [status] { return FakeHttpClient::json("{}", status); };
        const RegistryError e = f.error_of<RegistryError>(
            f.registry.module_versions(proto::parse_module_address(kModule), false));
        CHECK_THAT(e.what(), Catch::Contains("HTTP status " + std::to_string(status)));
        CHECK(f.registry.stats().stale == 0);
        // Nor later, while the refusal is remembered: the good answer is gone.
        f.now += 1s;
        const RegistryError again = f.error_of<RegistryError>(
            f.registry.module_versions(proto::parse_module_address(kModule), false));
        CHECK(again.cached());
    }
}

// ---- single flight
// -------------------------------------------------------------------------------------------------

TEST_CASE("concurrent requests for a cold document share one request", "[daemon][registry]") {
    Fixture f;
    f.http.routes[kModuleVersions] = [] { return FakeHttpClient::json(kModuleVersionsBody); };
    f.run(f.discovery.discover("r.example",
                               false));  // discovery warm: only the registry's request is held
    f.http.hold();
    constexpr int kRequests = 40;
    int done = 0;
    int ok = 0;
    for (int i = 0; i < kRequests; ++i) {
        asio::co_spawn(f.io,
                       f.registry.module_versions(proto::parse_module_address(kModule), false),
                       [&](std::exception_ptr e, const RegistryAnswer& a) {
                           ++done;
                           if (!e && a.document && a.document->versions.size() == 2) ++ok;
                       });
    }
    f.io.restart();
    // The keyring lookup for the token runs on the worker thread first.
    while (f.count(kModuleVersions) == 0 && f.io.run_one() > 0) {
    }
    f.io.poll();
    CHECK(f.count(kModuleVersions) == 1);
    CHECK(f.registry.stats().in_flight == 1);
    f.http.release();
    while (done < kRequests && f.io.run_one() > 0) {
    }
    CHECK(done == kRequests);
    CHECK(ok == kRequests);
    CHECK(f.count(kModuleVersions) == 1);
    CHECK(f.registry.stats().in_flight == 0);
    CHECK(f.registry.stats().upstream_requests == 1);
}

// ---- credentials
// ---------------------------------------------------------------------------------------------------

TEST_CASE("the registry's token goes to its own origin, not along a redirect elsewhere",
          "[daemon][registry]") {
    Fixture f;
    f.keyring.put("r.example", R"({"token":"T"})");
    f.http.routes[kModuleVersions] = [] { return FakeHttpClient::json(kModuleVersionsBody); };
    f.http.routes[kPackage] = [] {
        return FakeHttpClient::redirect("https://cdn.example/acme/thing/1.0.0/pkg.json");
    };
    f.http.routes["https://cdn.example/acme/thing/1.0.0/pkg.json"] = [] {
        return FakeHttpClient::json(package_body());
    };
    f.module_versions();
    REQUIRE(f.count(kModuleVersions) == 1);
    CHECK(f.requests_to(kModuleVersions)[0].bearer == "T");
    CHECK(f.requests_to(kDiscovery)[0].bearer == "T");

    const RegistryAnswer p = f.provider_package();
    CHECK(p.document->url == "https://cdn.example/acme/thing/1.0.0/pkg.json");
    CHECK(p.document->body.at("download_url") ==
          "https://cdn.example/acme/thing/1.0.0/thing_1.0.0_linux_amd64.zip");
    REQUIRE(f.count(kPackage) == 1);
    CHECK(f.requests_to(kPackage)[0].bearer == "T");
    const auto cdn = f.requests_to("https://cdn.example/acme/thing/1.0.0/pkg.json");
    REQUIRE(cdn.size() == 1);
    CHECK_FALSE(cdn[0].bearer.has_value());
    CHECK(f.registry.stats().upstream_requests == 3);  // the redirect counts
}

TEST_CASE("the token is not sent to a modules.v1 on another host", "[daemon][registry]") {
    Fixture f;
    f.keyring.put("o.example", R"({"token":"O"})");
    const std::string discovery = "https://o.example/.well-known/terraform.json";
    const std::string versions = "https://api.elsewhere.example/modules/acme/thing/aws/versions";
    f.http.routes[discovery] = [] {
        return FakeHttpClient::json(R"({"modules.v1":"https://api.elsewhere.example/modules/"})");
    };
    f.http.routes[versions] = [] { return FakeHttpClient::json(kModuleVersionsBody); };
    f.module_versions("o.example/acme/thing/aws");
    REQUIRE(f.count(versions) == 1);
    CHECK_FALSE(f.requests_to(versions)[0].bearer.has_value());
    CHECK(f.requests_to(discovery)[0].bearer == "O");

    // A 401 from there says why no credentials went (another module: the
    // first one's good answer would be served stale).
    const std::string other = "https://api.elsewhere.example/modules/acme/other/aws/versions";
    f.http.routes[other] = [] { return FakeHttpClient::json("{}", 401); };
    const RegistryError e = f.error_of<RegistryError>(
        f.registry.module_versions(proto::parse_module_address("o.example/acme/other/aws"), false));
    CHECK_THAT(
        e.what(),
        Catch::Contains(other + ": HTTP status 401; the credentials stored for o.example go to "
                                "https://o.example/ only"));
    REQUIRE(f.count(other) == 1);
    CHECK_FALSE(f.requests_to(other)[0].bearer.has_value());
}

TEST_CASE("a 401 says whether credentials were sent", "[daemon][registry]") {
    Fixture f;
    f.http.routes[kModuleVersions] = [] { return FakeHttpClient::json("{}", 401); };
    CHECK_THAT(f.error_of<RegistryError>(
                    f.registry.module_versions(proto::parse_module_address(kModule), false))
                   .what(),
               Catch::Contains("no credentials are stored for r.example"));

    Fixture g;
    g.keyring.put("r.example", R"({"token":"T"})");
    g.http.routes[kModuleVersions] = [] { return FakeHttpClient::json("{}", 403); };
    CHECK_THAT(g.error_of<RegistryError>(
                    g.registry.module_versions(proto::parse_module_address(kModule), false))
                   .what(),
               Catch::Contains("HTTP status 403 with the credentials stored for r.example"));
}

// ---- network mirrors
// -----------------------------------------------------------------------------------------------

TEST_CASE("a mirror's documents and credentials are the mirror's", "[daemon][registry]") {
    Fixture f;
    f.keyring.put("m.example:8443", R"({"token":"M"})");
    f.keyring.put("r.example", R"({"token":"T"})");
    const Mirror mirror = daemon::registry::make_mirror("https://m.example:8443/p/");
    const std::string index = "https://m.example:8443/p/r.example/acme/thing/index.json";
    const std::string version = "https://m.example:8443/p/r.example/acme/thing/1.0.0.json";
    f.http.routes[index] = [] { return FakeHttpClient::json(kMirrorIndexBody); };
    f.http.routes[version] = [] { return FakeHttpClient::json(kMirrorVersionBody); };

    const RegistryAnswer v = f.provider_versions(mirror);
    CHECK(v.document->url == index);
    CHECK(v.expires_in == 100s);
    REQUIRE(v.document->versions.size() == 2);
    CHECK(v.document->versions[0].to_string() == "1.1.0");
    REQUIRE(f.count(index) == 1);
    CHECK(f.requests_to(index)[0].bearer == "M");

    const RegistryAnswer p = f.provider_package(mirror);
    CHECK(p.document->url == version);
    CHECK(p.expires_in == 1000s);
    REQUIRE(f.count(version) == 1);
    CHECK(f.requests_to(version)[0].bearer == "M");
    const Json package = daemon::registry::mirror_package(*p.document, "linux_amd64", "the mirror");
    CHECK(package.at("download_url") ==
          "https://m.example:8443/p/r.example/acme/thing/thing_1.0.0_linux_amd64.zip");
    CHECK(package.at("filename") == "thing_1.0.0_linux_amd64.zip");
    CHECK(package.at("hashes") == Json::array({"h1:abc="}));
    try {
        daemon::registry::mirror_package(*p.document, "darwin_arm64", "the mirror");
        FAIL("no darwin_arm64 package expected");
    } catch (const proto::Error& e) {
        CHECK(e.code() == proto::ErrorCode::not_found);
        CHECK_THAT(e.what(), Catch::Contains("it has linux_amd64"));
    }

    // Neither the provider's registry nor its discovery is asked.
    CHECK(f.http.requests.size() == 2);
    CHECK(f.count(kDiscovery) == 0);
}

TEST_CASE("a mirror without stored credentials gets none, not the registry's",
          "[daemon][registry]") {
    Fixture f;
    f.keyring.put("r.example", R"({"token":"T"})");
    f.keyring.put("m.example", R"({"token":"WRONG-PORT"})");
    const Mirror mirror = daemon::registry::make_mirror("https://m.example:8443/p");
    const std::string index = "https://m.example:8443/p/r.example/acme/thing/index.json";
    f.http.routes[index] = [] { return FakeHttpClient::json(kMirrorIndexBody); };
    f.provider_versions(mirror);
    REQUIRE(f.count(index) == 1);
    CHECK_FALSE(f.requests_to(index)[0].bearer.has_value());
}

TEST_CASE("a provider host with a port appears in the mirror path as host:port",
          "[daemon][registry]") {
    Fixture f;
    const Mirror mirror = daemon::registry::make_mirror("https://m.example:8443/p/");
    const std::string index = "https://m.example:8443/p/r.example:8443/acme/thing/index.json";
    const std::string version = "https://m.example:8443/p/r.example:8443/acme/thing/1.0.0.json";
    f.http.routes[index] = [] { return FakeHttpClient::json(kMirrorIndexBody); };
    f.http.routes[version] = [] { return FakeHttpClient::json(kMirrorVersionBody); };
    f.provider_versions(mirror, "r.example:8443/acme/thing");
    f.provider_package(mirror, "r.example:8443/acme/thing");
    REQUIRE(f.http.requests.size() == 2);
    CHECK(f.http.requests[0].url == index);
    CHECK(f.http.requests[1].url == version);
}

TEST_CASE("a mirror's 404 is not_found naming the mirror", "[daemon][registry]") {
    Fixture f;
    const Mirror mirror = daemon::registry::make_mirror("https://m.example/p/");
    f.http.routes["https://m.example/p/r.example/acme/thing/index.json"] = [] {
        return FakeHttpClient::json("{}", 404);
    };
    const proto::Error e = f.error_of<proto::Error>(
        f.registry.provider_versions(proto::parse_provider_address(kProvider), mirror, false));
    CHECK(e.code() == proto::ErrorCode::not_found);
    CHECK_THAT(
        e.what(),
        Catch::Contains("the mirror https://m.example/p/ does not carry r.example/acme/thing"));
}

// ---- module download locations
// -------------------------------------------------------------------------------------

TEST_CASE("module download: X-Terraform-Get from a 204, a 200 body's location or else its header",
          "[daemon][registry]") {
    Fixture f;
    f.http.routes[download_url("1.0.0")] = [] {
        return get_header("git::https://g.example/thing.git?ref=v1.0.0", 204);
    };
    f.http.routes[download_url("1.1.0")] = [] {
        HttpResponse r = get_header("./thing-1.1.0.tar.gz", 200);
        r.body = "{}";  // a 200 must have a JSON object body, even when the header says it all
        return r;
    };
    f.http.routes[download_url("1.7.0")] = [] { return get_header("./thing-1.7.0.tar.gz", 200); };
    f.http.routes[download_url("1.2.0")] = [] {
        return FakeHttpClient::json(R"({"location":"/archives/thing-1.2.0.tar.gz"})");
    };
    f.http.routes[download_url("1.3.0")] = [] { return FakeHttpClient::json("", 204); };
    f.http.routes[download_url("1.4.0")] = [] { return FakeHttpClient::json(R"({"other":"x"})"); };

    RegistryAnswer a = f.module_download("1.0.0");
    CHECK(a.document->body.at("location") == "git::https://g.example/thing.git?ref=v1.0.0");
    CHECK(a.document->url == download_url("1.0.0"));
    a = f.module_download("1.1.0");
    CHECK(a.document->body.at("location") ==
          "https://r.example/v1/modules/acme/thing/aws/1.1.0/thing-1.1.0.tar.gz");
    a = f.module_download("1.2.0");
    CHECK(a.document->body.at("location") == "https://r.example/archives/thing-1.2.0.tar.gz");

    for (const std::string version : {"1.3.0", "1.4.0"}) {
        INFO(version);
        const RegistryError e = f.error_of<RegistryError>(f.registry.module_download(
            proto::parse_module_address(kModule), proto::parse_semver(version), false));
        CHECK_THAT(e.what(), Catch::Contains(download_url(version)));
        CHECK_THAT(e.what(), Catch::Contains("without an X-Terraform-Get header"));
    }
    // Terraform fails a 200 whose body is not JSON, header or not.
    const RegistryError e = f.error_of<RegistryError>(f.registry.module_download(
        proto::parse_module_address(kModule), proto::parse_semver("1.7.0"), false));
    CHECK_THAT(e.what(), Catch::Contains("must be a JSON object"));
}

TEST_CASE("module download: a 200 body's location comes before X-Terraform-Get, as in Terraform",
          "[daemon][registry]") {
    // Terraform's and OpenTofu's registry clients read the body of a 200
    // first and fall back to the header only when it has no location.
    Fixture f;
    f.http.routes[download_url("1.5.0")] = [] {
        HttpResponse r = FakeHttpClient::json(R"({"location":"./from-body.tar.gz"})");
        r.terraform_get = "./from-header.tar.gz";
        return r;
    };
    f.http.routes[download_url("1.6.0")] = [] {
        HttpResponse r = FakeHttpClient::json(R"({"location":""})");
        r.terraform_get = "./from-header.tar.gz";
        return r;
    };
    CHECK(f.module_download("1.5.0").document->body.at("location") ==
          "https://r.example/v1/modules/acme/thing/aws/1.5.0/from-body.tar.gz");
    CHECK(f.module_download("1.6.0").document->body.at("location") ==
          "https://r.example/v1/modules/acme/thing/aws/1.6.0/from-header.tar.gz");
}

// ---- services
// ------------------------------------------------------------------------------------------------------

TEST_CASE("a host whose discovery lacks modules.v1 is unsupported_service", "[daemon][registry]") {
    Fixture f;
    f.http.routes["https://p.example/.well-known/terraform.json"] = [] {
        return FakeHttpClient::json(R"({"providers.v1":"/v1/providers/"})");
    };
    f.http.routes["https://q.example/.well-known/terraform.json"] = [] {
        return FakeHttpClient::json(R"({"modules.v2":"/v2/modules/"})");
    };
    proto::Error e = f.error_of<proto::Error>(
        f.registry.module_versions(proto::parse_module_address("p.example/a/b/c"), false));
    CHECK(e.code() == proto::ErrorCode::unsupported_service);
    CHECK_THAT(e.what(), Catch::Contains("p.example does not provide modules.v1"));
    e = f.error_of<proto::Error>(f.registry.module_download(
        proto::parse_module_address("q.example/a/b/c"), proto::parse_semver("1.0.0"), false));
    CHECK(e.code() == proto::ErrorCode::unsupported_service);
    CHECK_THAT(e.what(),
               Catch::Contains("q.example does not support modules.v1; it offers modules.v2"));
    CHECK(f.http.requests.size() == 2);  // discovery only
    // Each was a miss (discovery is asked only when the document is not
    // cached), and nothing was kept: the next request asks discovery again.
    CHECK(f.registry.stats().misses == 2);
    CHECK(f.registry.stats().entries == 0);
}

// ---- flush and stats
// -----------------------------------------------------------------------------------------------

TEST_CASE("flush(host) drops that host's entries and those fetched with its credentials",
          "[daemon][registry]") {
    Fixture f;
    const Mirror mirror = daemon::registry::make_mirror("https://m.example:8443/p/");
    f.http.routes["https://s.example/.well-known/terraform.json"] = [] {
        return FakeHttpClient::json(R"({"modules.v1":"/v1/modules/"})");
    };
    f.http.routes[kModuleVersions] = [] { return FakeHttpClient::json(kModuleVersionsBody); };
    f.http.routes["https://s.example/v1/modules/acme/thing/aws/versions"] = [] {
        return FakeHttpClient::json(kModuleVersionsBody);
    };
    f.http.routes["https://m.example:8443/p/r.example/acme/thing/index.json"] = [] {
        return FakeHttpClient::json(kMirrorIndexBody);
    };
    f.http.routes["https://m.example:8443/p/s.example/acme/thing/index.json"] = [] {
        return FakeHttpClient::json(kMirrorIndexBody);
    };
    f.module_versions();
    f.module_versions("s.example/acme/thing/aws");
    f.provider_versions(mirror);
    f.provider_versions(mirror, "s.example/acme/thing");
    CHECK(f.registry.stats().entries == 4);

    CHECK(f.registry.flush("r.example") == 2);  // its module, and its provider from the mirror
    CHECK(f.registry.stats().entries == 2);
    CHECK(f.module_versions().source == AnswerSource::network);
    CHECK(f.module_versions("s.example/acme/thing/aws").source == AnswerSource::cache);

    CHECK(f.registry.flush("m.example:8443") ==
          1);  // s.example's provider, fetched with the mirror's credentials
    CHECK(f.provider_versions(mirror, "s.example/acme/thing").source == AnswerSource::network);
    CHECK(f.registry.flush("nothing.example") == 0);
    CHECK(f.registry.flush() == 3);
    CHECK(f.registry.stats().entries == 0);
}

TEST_CASE("stats count hits, misses, entries and upstream requests", "[daemon][registry]") {
    Fixture f;
    f.http.routes[kModuleVersions] = [] { return FakeHttpClient::json(kModuleVersionsBody); };
    f.http.routes[kProviderVersions] = [] { return FakeHttpClient::json("{}", 404); };
    f.http.routes[kPackage] = [] { return FakeHttpClient::json("{}", 500); };
    f.module_versions();
    f.module_versions();
    f.module_versions();
    f.error_of<proto::Error>(f.registry.provider_versions(proto::parse_provider_address(kProvider),
                                                          std::nullopt, false));
    f.error_of<RegistryError>(f.registry.provider_package(proto::parse_provider_address(kProvider),
                                                          proto::parse_semver("1.0.0"),
                                                          "linux_amd64", std::nullopt, false));
    f.error_of<RegistryError>(f.registry.provider_package(proto::parse_provider_address(kProvider),
                                                          proto::parse_semver("1.0.0"),
                                                          "linux_amd64", std::nullopt, false));
    const daemon::registry::RegistryStats s = f.registry.stats();
    CHECK(s.entries == 3);
    CHECK(s.positive == 1);
    CHECK(s.empty == 1);
    CHECK(s.errors == 1);
    CHECK(s.hits == 2);
    CHECK(s.misses == 3);
    CHECK(s.upstream_requests == 3);
    CHECK(s.upstream_failures == 1);
    CHECK(s.in_flight == 0);
}

TEST_CASE(
    "every failed upstream request is also counted as a request; a discovery failure is "
    "neither",
    "[daemon][registry]") {
    Fixture f;
    // The whole host is down: discovery fails, no registry request is sent.
    f.http.routes.clear();
    for (int i = 0; i < 4; ++i) {
        f.now += 20s;  // past error_ttl: each one asks again
        f.discovery.flush();
        f.error_of<RegistryError>(
            f.registry.module_versions(proto::parse_module_address(kModule), false));
    }
    daemon::registry::RegistryStats s = f.registry.stats();
    CHECK(s.upstream_requests == 0);
    CHECK(s.upstream_failures == 0);
    CHECK(s.errors == 1);
    // Discovery answers again, the registry fails: both counters move together.
    f.http.routes[kDiscovery] = [] {
        return FakeHttpClient::json(R"({"modules.v1":"/v1/modules/"})");
    };
    f.http.routes[kModuleVersions] = [] { return FakeHttpClient::json("{}", 503); };
    f.now += 20s;
    f.error_of<RegistryError>(
        f.registry.module_versions(proto::parse_module_address(kModule), false));
    s = f.registry.stats();
    CHECK(s.upstream_requests == 1);
    CHECK(s.upstream_failures == 1);
}

TEST_CASE("a platform that is not OS_ARCH is a bad request, asked of no one",
          "[daemon][registry]") {
    Fixture f;
    const proto::Error e = f.error_of<proto::Error>(
        f.registry.provider_package(proto::parse_provider_address(kProvider),
                                    proto::parse_semver("1.0.0"), "linux", std::nullopt, false));
    CHECK(e.code() == proto::ErrorCode::bad_request);
    CHECK(f.http.requests.empty());
}

}  // namespace test_registry_service
