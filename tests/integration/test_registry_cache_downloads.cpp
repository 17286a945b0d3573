// The registry cache's downloads against the real hostkeeperd: module
// archives, provider packages and a provider's SHA256SUMS and signature on
// the registry host's own origin (scheme, host and port) are fetched with
// that host's stored token; on another origin, and after a redirect to one,
// without it; a refusal on the registry's origin says the token was sent.
// A package document that a prefetch brought into the answer cache is the
// one kept on disk once Terraform's request is answered from it (a daemon
// started while the registry fails serves it, not an older one).
// Terraform's side of the listener needs no credentials for archives. The
// upstream is the suite's HTTPS server (https_world.hpp): registry.localhost
// and cdn.localhost on one port are two origins.
#include <openssl/sha.h>

#include <array>
#include <catch2/catch.hpp>
#include <string>
#include <thread>

#include "cache_world.hpp"
#include "https_world.hpp"

namespace test_registry_cache_downloads {

using namespace hostkeeper::it;
using hostkeeper::test::json_response;
using hostkeeper::test::Request;
using hostkeeper::test::Response;
using namespace std::chrono_literals;

namespace {

const std::string kToken = "download-token-0123456789";
const std::string kProvider = "/v1/providers/acme/thing/1.0.0/download/linux/amd64";

// 200 with `body` to a request carrying the registry's token, else 401.
hostkeeper::test::Handler protected_file(const std::string& body) {
    return [body](const Request& request) {
        Response out;
        if (request.authorization != "Bearer " + kToken) {
            out.status = 401;
            out.header("Content-Type", "application/json");
            out.body = R"({"errors":["unauthorized"]})";
            return out;
        }
        out.header("Content-Type", "application/octet-stream");
        out.body = body;
        return out;
    };
}

Response open_file(const std::string& body) {
    Response out;
    out.header("Content-Type", "application/octet-stream");
    out.body = body;
    return out;
}

Response module_location(const std::string& location) {
    Response out;
    out.status = 204;
    out.header("X-Terraform-Get", location);
    return out;
}

std::string sha256_hex(const std::string& data) {
    std::array<unsigned char, SHA256_DIGEST_LENGTH> digest{};
    SHA256(reinterpret_cast<const unsigned char*>(data.data()), data.size(), digest.data());
    std::string out;
    for (const unsigned char byte : digest) {
        static const char hex[] = "0123456789abcdef";
        out.push_back(hex[byte >> 4]);
        out.push_back(hex[byte & 15]);
    }
    return out;
}

// The Authorization headers upstream got for (host without port, path): "(none)" for none.
std::vector<std::string> authorizations(const CacheWorld& w, const std::string& host,
                                        const std::string& path) {
    std::vector<std::string> out;
    for (const Request& seen : w.server.requests()) {
        if (seen.host == host && seen.path == path)
            out.push_back(seen.authorization.value_or("(none)"));
    }
    return out;
}

// The listener's path of an absolute listener URL.
std::string path_of(const std::string& url) {
    return url.substr(url.find('/', std::string("http://").size()));
}

// The module version's archive through the listener: the download answer's
// X-Terraform-Get, then that URL, without credentials (as go-getter asks).
HttpAnswer module_archive(const CacheWorld& w, const std::string& version) {
    const HttpAnswer download =
        w.get("/v1/" + w.registry() + "/modules/acme/hello/null/" + version + "/download",
              bearer(kToken));
    INFO(download.raw);
    REQUIRE(download.status == 204);
    const std::string marker = "X-Terraform-Get: ";
    const auto at = download.head.find(marker);
    REQUIRE(at != std::string::npos);
    const std::string location = download.head.substr(
        at + marker.size(), download.head.find("\r\n", at) - at - marker.size());
    REQUIRE(location.rfind("http://" + w.listen() + "/archives/modules/", 0) == 0);
    return w.get(path_of(location));
}

}  // namespace

TEST_CASE(
    "registry cache: module archives get the registry's token on its own origin only, never "
    "after a redirect elsewhere",
    "[registry-cache-downloads]") {
    CacheWorld w;
    const std::string module = "registry.localhost";
    w.server.route(module, kModule + "/1.0.0/download",
                   module_location("/files/hello-1.0.0.tar.gz"));
    w.server.route(module, "/files/hello-1.0.0.tar.gz", protected_file("same origin"));
    w.server.route(module, kModule + "/1.1.0/download",
                   module_location(w.url("cdn", "/files/hello-1.1.0.tar.gz")));
    w.server.route("cdn.localhost", "/files/hello-1.1.0.tar.gz", open_file("other origin"));
    w.server.route(module, kModule + "/1.2.0/download",
                   module_location("/moved/hello-1.2.0.tar.gz"));
    w.server.route(module, "/moved/hello-1.2.0.tar.gz",
                   hostkeeper::test::redirect(w.url("cdn", "/files/hello-1.2.0.tar.gz")));
    w.server.route("cdn.localhost", "/files/hello-1.2.0.tar.gz", open_file("redirected"));
    w.start_cache({w.registry()});
    store_token(w, w.registry(), kToken);

    const HttpAnswer same = module_archive(w, "1.0.0");
    CHECK(same.status == 200);
    CHECK(same.body == "same origin");
    CHECK(authorizations(w, module, "/files/hello-1.0.0.tar.gz") ==
          std::vector<std::string>{"Bearer " + kToken});

    const HttpAnswer other = module_archive(w, "1.1.0");
    CHECK(other.status == 200);
    CHECK(other.body == "other origin");
    CHECK(authorizations(w, "cdn.localhost", "/files/hello-1.1.0.tar.gz") ==
          std::vector<std::string>{"(none)"});

    const HttpAnswer redirected = module_archive(w, "1.2.0");
    CHECK(redirected.status == 200);
    CHECK(redirected.body == "redirected");
    CHECK(authorizations(w, module, "/moved/hello-1.2.0.tar.gz") ==
          std::vector<std::string>{"Bearer " + kToken});
    CHECK(authorizations(w, "cdn.localhost", "/files/hello-1.2.0.tar.gz") ==
          std::vector<std::string>{"(none)"});

    // Nothing on cdn.localhost ever saw the token.
    for (const Request& seen : w.server.requests()) {
        INFO(seen.host_header << seen.target);
        if (seen.host == "cdn.localhost") CHECK_FALSE(seen.authorization.has_value());
    }
    // Stored, the archive is served again without a download.
    const HttpAnswer again = module_archive(w, "1.0.0");
    CHECK(again.body == "same origin");
    CHECK(w.server.count(module, "/files/hello-1.0.0.tar.gz") == 1);
}

TEST_CASE("registry cache: a 401 to an archive on the registry's origin says the token was sent",
          "[registry-cache-downloads]") {
    CacheWorld w;
    const std::string module = "registry.localhost";
    w.server.route(module, kModule + "/1.3.0/download", module_location("/files/denied.tar.gz"));
    w.server.route(module, "/files/denied.tar.gz", json_response("{}", 401));
    w.start_cache({w.registry()});
    store_token(w, w.registry(), kToken);

    const HttpAnswer denied = module_archive(w, "1.3.0");
    INFO(denied.raw);
    CHECK(denied.status == 502);
    CHECK_THAT(denied.body, Catch::Contains(w.url("registry", "/files/denied.tar.gz") +
                                            ": HTTP status 401 with the credentials stored for " +
                                            w.registry()));
    CHECK_THAT(denied.raw, !Catch::Contains(kToken));
    CHECK(authorizations(w, module, "/files/denied.tar.gz") ==
          std::vector<std::string>{"Bearer " + kToken});
}

TEST_CASE(
    "registry cache: a provider's package and SHA256SUMS get the registry's token on its origin; "
    "a signature elsewhere gets none",
    "[registry-cache-downloads]") {
    CacheWorld w;
    // The smallest valid zip: an end-of-central-directory record, no files.
    const std::string zip = std::string("PK\x05\x06", 4) + std::string(18, '\0');
    const std::string file = "terraform-provider-thing_1.0.0_linux_amd64.zip";
    const std::string sums = sha256_hex(zip) + "  " + file + "\n";
    const Json package{{"protocols", {"5.0"}},
                       {"os", "linux"},
                       {"arch", "amd64"},
                       {"filename", file},
                       {"download_url", "/files/" + file},
                       {"shasums_url", "/files/SHA256SUMS"},
                       {"shasums_signature_url", w.url("cdn", "/files/SHA256SUMS.sig")},
                       {"shasum", sha256_hex(zip)}};
    const std::string module = "registry.localhost";
    w.serve("registry",
            json_response(R"({"modules.v1":"/v1/modules/","providers.v1":"/v1/providers/"})"));
    w.server.route(module, kProvider, json_response(package.dump()));
    w.server.route(module, "/files/" + file, protected_file(zip));
    w.server.route(module, "/files/SHA256SUMS", protected_file(sums));
    w.server.route("cdn.localhost", "/files/SHA256SUMS.sig", open_file("a signature"));
    w.start_cache({w.registry()});
    store_token(w, w.registry(), kToken);

    const HttpAnswer document = w.get(
        "/v1/" + w.registry() + "/providers/acme/thing/1.0.0/download/linux/amd64", bearer(kToken));
    INFO(document.raw);
    REQUIRE(document.status == 200);
    const Json answer = Json::parse(document.body);
    // Terraform asks for these without credentials, as it always does.
    const HttpAnswer got_sums = w.get(path_of(answer.at("shasums_url").get<std::string>()));
    CHECK(got_sums.status == 200);
    CHECK(got_sums.body == sums);
    const HttpAnswer got_sig =
        w.get(path_of(answer.at("shasums_signature_url").get<std::string>()));
    CHECK(got_sig.status == 200);
    CHECK(got_sig.body == "a signature");
    const HttpAnswer got_zip = w.get(path_of(answer.at("download_url").get<std::string>()));
    CHECK(got_zip.status == 200);
    CHECK(got_zip.body == zip);

    const std::vector<std::string> with_token{"Bearer " + kToken};
    CHECK(authorizations(w, module, "/files/SHA256SUMS") == with_token);
    CHECK(authorizations(w, module, "/files/" + file) == with_token);
    CHECK(authorizations(w, "cdn.localhost", "/files/SHA256SUMS.sig") ==
          std::vector<std::string>{"(none)"});
}

TEST_CASE("registry cache: a network mirror's archive gets the mirror's token on its origin",
          "[registry-cache-downloads]") {
    CacheWorld w;
    const std::string zip = std::string("PK\x05\x06", 4) + std::string(18, '\0');
    const std::string sha = sha256_hex(zip);
    const std::string provider = w.registry() + "/acme/thing/";
    const std::string file = "terraform-provider-thing_1.1.0_linux_amd64.zip";
    w.server.route("mirror.localhost", "/providers/" + provider + "1.1.0.json",
                   json_response(R"({"archives":{"linux_amd64":{"url":")" + file +
                                 R"(","hashes":["zh:)" + sha + R"("]}}})"));
    w.server.route("mirror.localhost", "/providers/" + provider + file, protected_file(zip));
    w.start_cache({w.registry()}, true,
                  "[registry]\nmirror_url = \"" + w.url("mirror", "/providers/") + "\"\n");
    store_token(w, w.host("mirror"), kToken);

    const HttpAnswer version = w.get("/mirror/" + provider + "1.1.0.json");
    INFO(version.raw);
    REQUIRE(version.status == 200);
    const Json archive = Json::parse(version.body).at("archives").at("linux_amd64");
    const HttpAnswer got = w.get(path_of(archive.at("url").get<std::string>()));
    CHECK(got.status == 200);
    CHECK(got.body == zip);
    CHECK(authorizations(w, "mirror.localhost", "/providers/" + provider + file) ==
          std::vector<std::string>{"Bearer " + kToken});
}

TEST_CASE("registry cache: a package document a prefetch brought is the one kept on disk",
          "[registry-cache-downloads]") {
    CacheWorld w;
    const std::string registry = "registry.localhost";
    const std::string file = "terraform-provider-thing_1.0.0_linux_amd64.zip";
    const auto package = [&file](const std::string& shasum) {
        return json_response(Json{
            {"protocols", {"5.0"}},
            {"os", "linux"},
            {"arch", "amd64"},
            {"filename", file},
            {"download_url", "/files/" + file},
            {"shasums_url", "/files/SHA256SUMS"},
            {"shasums_signature_url", "/files/SHA256SUMS.sig"},
            {"shasum", shasum}}.dump());
    };
    const std::string first(64, 'a');
    const std::string second(64, 'b');
    w.serve("registry",
            json_response(R"({"modules.v1":"/v1/modules/","providers.v1":"/v1/providers/"})"));
    w.server.route(registry, "/v1/providers/acme/thing/versions",
                   json_response(R"({"versions":[{"version":"1.0.0","protocols":["5.0"],)"
                                 R"("platforms":[{"os":"linux","arch":"amd64"}]}]})"));
    w.server.route(registry, kProvider, package(first));
    w.server.route(registry, "/files/SHA256SUMS", open_file("sums"));
    w.server.route(registry, "/files/SHA256SUMS.sig", open_file("signature"));
    // Everything expires after two seconds: the next versions answer fetches again.
    const std::string config = "[registry]\nversions_ttl = \"2s\"\ndownload_ttl = \"2s\"\n";
    w.start_cache({w.registry()}, true, config);
    const std::string versions = "/v1/" + w.registry() + "/providers/acme/thing/versions";
    const std::string document =
        "/v1/" + w.registry() + "/providers/acme/thing/1.0.0/download/linux/amd64";
    const auto shasum_of = [](const HttpAnswer& answer) {
        INFO(answer.raw);
        REQUIRE(answer.status == 200);
        return Json::parse(answer.body).at("shasum").get<std::string>();
    };
    const auto sums_fetched = [&w, &registry](std::size_t times) {
        return wait_until([&] { return w.server.count(registry, "/files/SHA256SUMS") == times; },
                          15s);
    };

    // Asked for itself (from the network): kept on disk, and its platform
    // is the one the versions answer guesses for from now on.
    CHECK(shasum_of(w.get(document)) == first);
    REQUIRE(sums_fetched(1));

    // The registry publishes another document. Once the first expired, the
    // versions answer fetches it ahead of Terraform (with its SHA256SUMS,
    // fetched once the document is in the answer cache); Terraform's
    // request is answered from the cache.
    w.server.route(registry, kProvider, package(second));
    std::this_thread::sleep_for(2500ms);
    REQUIRE(w.get(versions).status == 200);
    REQUIRE(sums_fetched(2));
    CHECK(w.server.count(registry, kProvider) == 2);
    CHECK(shasum_of(w.get(document)) == second);
    CHECK(w.server.count(registry, kProvider) == 2);

    // A new hostkeeperd while the registry fails: the answer kept on disk
    // stands in, and it is the second document.
    Response failing;
    failing.status = 500;
    failing.body = "down";
    w.server.route(registry, kProvider, failing);
    w.stop_daemon();
    w.start_cache({w.registry()}, true, config);
    INFO(w.daemon_log());
    CHECK(shasum_of(w.get(document)) == second);
    CHECK(w.server.count(registry, kProvider) >= 3);  // the new daemon asked, and failed
}

}  // namespace test_registry_cache_downloads
