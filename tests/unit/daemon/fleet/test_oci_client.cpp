// The OCI Distribution calls and their authentication, against a scripted
// registry. The real docker-registry is in tests/e2e/registry_fleet.sh.
#include <catch2/catch.hpp>
#include <memory>
#include <optional>
#include <string>

#include "daemon/archives/package_hash.hpp"
#include "daemon/fleet/oci_client.hpp"
#include "tests/unit/fake_http_client.hpp"
#include "tests/unit/run_awaitable.hpp"

namespace test_oci_client {

using namespace hostkeeper::daemon::fleet;
using Catch::Matchers::Contains;
using hostkeeper::daemon::http::HttpRequest;
using hostkeeper::daemon::http::HttpResponse;
using hostkeeper::proto::Secret;
using hostkeeper::test::FakeHttpClient;
using hostkeeper::test::run_to_completion;

constexpr const char* kManifestUrl = "https://oci.example/v2/ci/x/manifests/1.0.0";
constexpr const char* kRealm = "https://auth.example/token";

boost::asio::awaitable<FleetCredentials> give(std::optional<std::string> text,
                                              std::string why_none = {}) {
    FleetCredentials out;
    if (text) out.user_password = Secret(*text);
    out.why_none = std::move(why_none);
    co_return out;
}

CredentialLookup lookup_of(const std::optional<std::string>& text) {
    return [text] { return give(text); };
}

HttpResponse answer(long status, std::string body = {}) {
    HttpResponse r;
    r.status = status;
    r.body = std::move(body);
    r.content_type = "application/vnd.oci.image.manifest.v1+json";
    return r;
}

HttpResponse challenge(std::string header) {
    HttpResponse r = answer(401);
    r.www_authenticate = {std::move(header)};
    return r;
}

struct Fixture {
    boost::asio::io_context io;
    FakeHttpClient http{io.get_executor()};

    FleetAddress fleet = parse_fleet_address("oci://oci.example/ci");

    OciClient client(const std::optional<std::string>& credentials) {
        return OciClient(http, fleet, lookup_of(credentials));
    }
};

// What the refusal of `client`'s manifest call says (it must be one).
std::string refusal(Fixture& f, OciClient& client) {
    try {
        run_to_completion(f.io, client.manifest("ci/x", "1.0.0"));
    } catch (const OciError& e) {
        CHECK(e.cause() == OciFailure::refused);
        return e.what();
    }
    FAIL("no error");
    return {};
}

TEST_CASE("a registry that asks for Basic gets the credentials, and keeps getting them",
          "[fleet]") {
    Fixture f;
    f.http.respond = [](const HttpRequest& request) {
        if (request.basic_credentials && request.basic_credentials->view() == "u:p")
            return answer(200, "{}");
        return challenge(R"(Basic realm="registry")");
    };
    OciClient client = f.client("u:p");
    CHECK(run_to_completion(f.io, client.manifest("ci/x", "1.0.0"))->body == "{}");
    REQUIRE(f.http.requests.size() == 2);
    CHECK_FALSE(f.http.requests[0].basic.has_value());  // anonymous first
    CHECK(f.http.requests[1].basic == "u:p");
    // Asked once: the next call sends them at once.
    CHECK(run_to_completion(f.io, client.manifest("ci/x", "1.0.0")));
    REQUIRE(f.http.requests.size() == 3);
    CHECK(f.http.requests[2].basic == "u:p");
}

TEST_CASE("Basic credentials changed since they were sent are looked up again on a 401",
          "[fleet]") {
    Fixture f;
    std::string accepted = "u:p";
    auto current = std::make_shared<std::string>("u:p");
    f.http.respond = [&accepted](const HttpRequest& request) {
        if (request.basic_credentials && request.basic_credentials->view() == accepted)
            return answer(200, "{}");
        return challenge(R"(Basic realm="registry")");
    };
    OciClient client(f.http, f.fleet, [current] { return give(*current); });
    CHECK(run_to_completion(f.io, client.manifest("ci/x", "1.0.0")));
    accepted = "u:new";
    *current = "u:new";
    CHECK(run_to_completion(f.io, client.manifest("ci/x", "1.0.0")));
    CHECK(f.http.requests.back().basic == "u:new");
}

TEST_CASE("a registry with a token service: a token per scope, kept until it expires", "[fleet]") {
    Fixture f;
    f.http.respond = [](const HttpRequest& request) {
        if (request.url.rfind(kRealm, 0) == 0) {
            if (!request.basic_credentials || request.basic_credentials->view() != "u:p")
                return answer(401);
            return answer(200, R"({"token":"T1","expires_in":300})");
        }
        if (request.bearer_token && request.bearer_token->view() == "T1")
            return answer(request.method == "HEAD" ? 404 : 200, "{}");
        return challenge(R"(Bearer realm="https://auth.example/token",service="oci.example",)"
                         R"(scope="repository:ci/x:pull")");
    };
    OciClient client = f.client("u:p");
    CHECK(run_to_completion(f.io, client.manifest("ci/x", "1.0.0")));
    REQUIRE(f.http.requests.size() == 3);
    CHECK(f.http.requests[1].url ==
          "https://auth.example/token?service=oci.example&scope=repository%3aci%2fx%3apull");
    CHECK(f.http.requests[1].basic == "u:p");
    CHECK(f.http.requests[2].bearer == "T1");
    CHECK_FALSE(f.http.requests[2].basic.has_value());
    CHECK_FALSE(run_to_completion(f.io, client.has_blob("ci/x", "sha256:" + std::string(64, 'a'))));
    CHECK(f.http.requests.size() == 4);  // the pull token served the HEAD too
}

TEST_CASE("credentials the registry refuses fail the call as refused, with the fix", "[fleet]") {
    Fixture f;
    f.http.respond = [](const HttpRequest&) { return challenge(R"(Basic realm="r")"); };
    OciClient client = f.client("u:wrong");
    try {
        run_to_completion(f.io, client.manifest("ci/x", "1.0.0"));
        FAIL("no error");
    } catch (const OciError& e) {
        CHECK(e.cause() == OciFailure::refused);
        CHECK_THAT(e.what(), Contains("401") && Contains("credentials"));
        CHECK_THAT(e.what(), !Contains("wrong"));
    }
    // Without credentials there is nothing to try after the first 401.
    Fixture anonymous;
    anonymous.http.respond = [](const HttpRequest&) { return challenge(R"(Basic realm="r")"); };
    OciClient none = anonymous.client(std::nullopt);
    CHECK_THAT(refusal(anonymous, none), Contains("asks for credentials, and none are configured"));
    CHECK(anonymous.http.requests.size() == 1);
}

TEST_CASE("a refusal says why there were no credentials to send", "[fleet]") {
    const std::string why = "docker-credential-ecr-login: exited with status 1";
    SECTION("Basic") {
        Fixture f;
        f.http.respond = [](const HttpRequest&) { return challenge(R"(Basic realm="r")"); };
        OciClient client(f.http, f.fleet, [why] { return give(std::nullopt, why); });
        CHECK_THAT(refusal(f, client),
                   Contains("oci.example asks for credentials, and there are none: " + why));
        CHECK(f.http.requests.size() == 1);
    }
    SECTION("a token service, asked anonymously first") {
        Fixture f;
        f.http.respond = [](const HttpRequest& request) {
            if (request.url.rfind(kRealm, 0) == 0) return answer(401);
            return challenge(R"(Bearer realm="https://auth.example/token",service="s")");
        };
        OciClient client(f.http, f.fleet, [why] { return give(std::nullopt, why); });
        CHECK_THAT(refusal(f, client),
                   Contains("401") && Contains("no credentials were sent: " + why));
        REQUIRE(f.http.requests.size() == 2);
        CHECK_FALSE(f.http.requests[1].basic.has_value());
    }
}

TEST_CASE("a token service that is not https elsewhere is not sent credentials", "[fleet]") {
    Fixture f;
    f.http.respond = [](const HttpRequest&) {
        return challenge(R"(Bearer realm="http://auth.example/token",service="s")");
    };
    OciClient client = f.client("u:p");
    try {
        run_to_completion(f.io, client.manifest("ci/x", "1.0.0"));
        FAIL("no error");
    } catch (const OciError& e) {
        CHECK(e.cause() == OciFailure::protocol);
        CHECK_THAT(e.what(), Contains("not https"));
    }
    CHECK(f.http.requests.size() == 1);
}

TEST_CASE("no answer is unreachable; a full registry is full; a missing manifest is none",
          "[fleet]") {
    Fixture f;
    OciClient client = f.client(std::nullopt);
    try {
        run_to_completion(f.io, client.manifest("ci/x", "1.0.0"));  // no route: no answer
        FAIL("no error");
    } catch (const OciError& e) {
        CHECK(e.cause() == OciFailure::unreachable);
    }
    f.http.routes[kManifestUrl] = [] { return answer(404); };
    CHECK_FALSE(run_to_completion(f.io, client.manifest("ci/x", "1.0.0")).has_value());
    f.http.routes[kManifestUrl] = [] { return answer(507); };
    try {
        run_to_completion(f.io, client.put_manifest("ci/x", "1.0.0", "t", "{}"));
        FAIL("no error");
    } catch (const OciError& e) {
        CHECK(e.cause() == OciFailure::full);
    }
}

TEST_CASE("a blob is checked against its digest as it comes", "[fleet]") {
    Fixture f;
    const std::string bytes = "PK provider package";
    const std::string digest = "sha256:" + hostkeeper::daemon::archives::sha256_hex(bytes);
    const std::string url = "https://oci.example/v2/ci/x/blobs/" + digest;
    char path[] = "/tmp/hk-oci-blob-XXXXXX";
    const int fd = ::mkstemp(path);
    REQUIRE(fd >= 0);
    ::unlink(path);
    OciClient client = f.client(std::nullopt);

    f.http.routes[url] = [&bytes] { return answer(200, bytes); };
    CHECK(run_to_completion(f.io, client.blob_to("ci/x", digest, fd, 1024)) == bytes.size());

    f.http.routes[url] = [] { return answer(200, "other bytes"); };
    try {
        run_to_completion(f.io, client.blob_to("ci/x", digest, fd, 1024));
        FAIL("no error");
    } catch (const OciError& e) {
        CHECK(e.cause() == OciFailure::mismatch);
        CHECK_THAT(e.what(), Contains(digest));
    }
    ::close(fd);
}

TEST_CASE("an upload is a HEAD, a POST for its URL, then one PUT with the digest", "[fleet]") {
    Fixture f;
    const std::string digest = "sha256:" + std::string(64, 'b');
    std::string put_url;
    f.http.respond = [&](const HttpRequest& request) {
        if (request.method == "HEAD") return answer(404);
        if (request.method == "POST") {
            HttpResponse r = answer(202);
            r.location = "https://oci.example/v2/ci/x/blobs/uploads/u1?state=s";
            return r;
        }
        put_url = request.url;
        return answer(request.body == "{}" ? 201 : 400);
    };
    OciClient client = f.client(std::nullopt);
    run_to_completion(f.io, client.push_text_blob("ci/x", digest, "{}"));
    REQUIRE(f.http.requests.size() == 3);
    CHECK(f.http.requests[1].url == "https://oci.example/v2/ci/x/blobs/uploads/");
    CHECK(put_url == "https://oci.example/v2/ci/x/blobs/uploads/u1?state=s&digest=sha256%3a" +
                         std::string(64, 'b'));

    // Present already: nothing is uploaded.
    f.http.requests.clear();
    f.http.respond = [](const HttpRequest&) { return answer(200); };
    run_to_completion(f.io, client.push_text_blob("ci/x", digest, "{}"));
    CHECK(f.http.requests.size() == 1);
}

}  // namespace test_oci_client
