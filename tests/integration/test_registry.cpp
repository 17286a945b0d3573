// The registry and network-mirror clients end to end: the real hostkeeperd
// and hostkeeper against a local module registry, provider registry and
// provider network mirror served over real HTTPS on loopback (support/
// tls_server) with a throw-away CA. Assertions about credentials are made on
// what the server received. Long versions lists passed by reference are
// checked on the wire too.
#include <fcntl.h>
#include <sys/socket.h>
#include <sys/uio.h>
#include <sys/un.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <atomic>
#include <catch2/catch.hpp>
#include <chrono>
#include <cstring>
#include <fstream>
#include <string>
#include <thread>
#include <vector>

#include "https_world.hpp"
#include "proto/framing.hpp"
#include "tests/support/long_versions.hpp"

namespace test_registry {

using namespace hostkeeper::it;
using Catch::Matchers::Contains;
using hostkeeper::test::json_response;
using hostkeeper::test::redirect;
using hostkeeper::test::Request;
using namespace std::chrono_literals;

namespace {

const std::string kModule = "/v1/modules/acme/hello/null";
const std::string kProvider = "/v1/providers/acme/thing";
const std::string kShasum = "5f0c6d4f2b7d0b2a8f3b9b6c1c9e8d7a6b5c4d3e2f1a0b9c8d7e6f5a4b3c2d1e";

Catch::Matchers::StdString::ContainsMatcher has(const std::string& text) {
    return Contains(text, Catch::CaseSensitive::No);
}

// A local registry at registry.localhost offering modules.v1 and providers.v1.
struct Registry : World {
    std::string host() const { return World::host("registry"); }
    std::string module() const { return host() + "/acme/hello/null"; }
    std::string provider() const { return host() + "/acme/thing"; }
    std::string mirror_base() const { return url("mirror", "/providers/"); }
    // Mirror paths hold the provider's hostname, port included.
    std::string mirror_path(const std::string& file) const {
        return "/providers/" + host() + "/acme/thing/" + file;
    }

    Registry() {
        serve("registry",
              json_response(R"({"modules.v1":"/v1/modules/","providers.v1":"/v1/providers/"})"));
        server.route("registry.localhost", kModule + "/versions",
                     json_response(R"({"modules":[{"versions":[
            {"version":"1.0.0"},{"version":"1.1.0"},{"version":"2.0.0-beta.1"},{"version":"1.2.0"},
            {"version":"0.9.0"},{"version":"2.0.0"},{"version":"not-a-version"}]}]})"));
        server.route("registry.localhost", kProvider + "/versions", json_response(R"({"versions":[
            {"version":"1.0.0","protocols":["5.0"],"platforms":[{"os":"linux","arch":"amd64"},{"os":"darwin","arch":"arm64"}]},
            {"version":"1.1.0","protocols":["5.0","6.0"],"platforms":[{"os":"linux","arch":"amd64"}]},
            {"version":"2.0.0-rc.1","protocols":["6.0"],"platforms":[]}],
            "warnings":["acme/thing is deprecated"]})"));
        server.route("registry.localhost",
                     kProvider + "/1.1.0/download/linux/amd64", json_response(R"({
            "protocols":["5.0","6.0"],"os":"linux","arch":"amd64",
            "filename":"terraform-provider-thing_1.1.0_linux_amd64.zip",
            "download_url":"../../../../../../files/terraform-provider-thing_1.1.0_linux_amd64.zip",
            "shasums_url":"https://cdn.localhost/thing_1.1.0_SHA256SUMS",
            "shasums_signature_url":"/files/thing_1.1.0_SHA256SUMS.sig",
            "shasum":")" + kShasum + R"(",
            "signing_keys":{"gpg_public_keys":[{"key_id":"51852D87348FFC4C","ascii_armor":"-----BEGIN PGP PUBLIC KEY BLOCK-----"}]}})"));
    }

    void serve_mirror() {
        server.route("mirror.localhost", mirror_path("index.json"),
                     json_response(R"({"versions":{"1.0.0":{},"1.1.0":{},"1.2.0-beta":{}}})"));
        server.route("mirror.localhost", mirror_path("1.1.0.json"),
                     json_response(R"({"archives":{
            "linux_amd64":{"url":"terraform-provider-thing_1.1.0_linux_amd64.zip","hashes":["h1:abc=","zh:)" +
                                   kShasum + R"("]},
            "darwin_arm64":{"url":"https://cdn.localhost/x/thing_darwin_arm64.zip","hashes":[]}}})"));
    }

    Result hk(std::vector<std::string> args) const { return cli(args); }
    // `hostkeeper ARGS... --json`, which must succeed.
    Json hk_json(std::vector<std::string> args) const {
        args.push_back("--json");
        const Result result = cli(args);
        INFO("hostkeeper " << args.front() << " ...: exit " << result.exit_code
                           << "\nstdout: " << result.out << "\nstderr: " << result.err);
        REQUIRE(result.exit_code == 0);
        return Json::parse(result.out);
    }
    std::vector<std::string> versions(const Json& answer) const {
        std::vector<std::string> out;
        for (const Json& entry : answer.at("versions"))
            out.push_back(entry.at("version").get<std::string>());
        return out;
    }
    // Authorization headers received for `host` (without port) and `path`.
    std::vector<std::string> authorizations(const std::string& name,
                                            const std::string& path) const {
        std::vector<std::string> out;
        for (const Request& r : server.requests()) {
            if (r.host == name + ".localhost" && r.path == path)
                out.push_back(r.authorization.value_or("(none)"));
        }
        return out;
    }
};

using Strings = std::vector<std::string>;

}  // namespace

TEST_CASE("module versions: newest first, constraints, prereleases only when named exactly",
          "[registry]") {
    Registry world;
    world.start();
    store_token(world, world.host(), "registry-token");

    const Json all = world.hk_json({"module", "versions", world.module()});
    INFO(all.dump(2));
    CHECK(all.at("module") == world.module());
    CHECK(all.at("source") == "network");
    CHECK(all.at("url") == world.url("registry", kModule + "/versions"));
    CHECK(world.versions(all) ==
          Strings{"2.0.0", "2.0.0-beta.1", "1.2.0", "1.1.0", "1.0.0", "0.9.0"});
    CHECK(all.at("invalid") == Json::array({"not-a-version"}));
    CHECK(world.authorizations("registry", kModule + "/versions") ==
          Strings{"Bearer registry-token"});

    const auto matching = [&](const std::string& constraint) {
        return world.versions(
            world.hk_json({"module", "versions", world.module(), "--constraint", constraint}));
    };
    CHECK(matching("~> 1.1") == Strings{"1.2.0", "1.1.0"});
    CHECK(matching("~> 1.1.0") == Strings{"1.1.0"});
    CHECK(matching(">= 1.0, < 2.0, != 1.1.0") == Strings{"1.2.0", "1.0.0"});
    CHECK(matching(">= 2.0.0-beta.1") == Strings{"2.0.0"});
    CHECK(matching("2.0.0-beta.1") == Strings{"2.0.0-beta.1"});
    CHECK(matching("= 0.9.0") == Strings{"0.9.0"});
    CHECK(matching("> 5").empty());
    const Json filtered =
        world.hk_json({"module", "versions", world.module(), "--constraint", "~> 1.1"});
    CHECK(filtered.at("constraint") == "~> 1.1");
    CHECK(filtered.at("total") == 6);
    CHECK(filtered.at("source") == "cache");
    CHECK(world.server.count("registry.localhost", kModule + "/versions") == 1);

    const Result table = world.hk({"module", "versions", world.module(), "--constraint", "~> 1.1"});
    INFO(table.err);
    CHECK(table.exit_code == 0);
    CHECK_THAT(table.out, Contains("2 versions matching \"~> 1.1\" (of 6)"));
    CHECK_THAT(table.out, Contains("1.2.0\n1.1.0\n"));

    const Result bad = world.hk({"module", "versions", world.module(), "--constraint", "~> 1.x"});
    CHECK(bad.exit_code == 2);
    CHECK_THAT(bad.err, Contains("\"1.x\""));
}

TEST_CASE("module download: X-Terraform-Get in every form, resolved against the endpoint",
          "[registry]") {
    Registry world;
    const std::string endpoint = kModule + "/1.2.0/download";
    const std::string base = world.url("registry", kModule + "/1.2.0/");
    const std::vector<std::pair<std::string, std::string>> forms{
        {"/archives/hello-1.2.0.tar.gz", world.url("registry", "/archives/hello-1.2.0.tar.gz")},
        {"./hello.tar.gz", world.url("registry", kModule + "/1.2.0/hello.tar.gz")},
        {"../hello.tar.gz", world.url("registry", kModule + "/hello.tar.gz")},
        {"git::https://example.com/acme/hello.git?ref=v1.2.0",
         "git::https://example.com/acme/hello.git?ref=v1.2.0"},
        {"https://cdn.localhost/hello.zip//sub?archive=zip",
         "https://cdn.localhost/hello.zip//sub?archive=zip"},
    };
    world.start();
    for (const auto& [value, expected] : forms) {
        hostkeeper::test::Response response;
        response.status = 204;
        response.header("X-Terraform-Get", value);
        world.server.route("registry.localhost", endpoint, response);
        const Json answer =
            world.hk_json({"module", "download", world.module(), "1.2.0", "--refresh"});
        INFO(value << "\n" << answer.dump(2));
        CHECK(answer.at("location") == expected);
        CHECK(answer.at("url") == world.url("registry", endpoint));
        CHECK(answer.at("version") == "1.2.0");
        const Result plain = world.hk({"module", "download", world.module(), "1.2.0"});
        CHECK(plain.out == expected + "\n");
    }

    SECTION("a 200 whose body names the location, as Terraform accepts") {
        world.server.route("registry.localhost", endpoint,
                           json_response(R"({"location":"./body.tgz"})"));
        CHECK(world.hk_json({"module", "download", world.module(), "1.2.0", "--refresh"})
                  .at("location") == base + "body.tgz");
    }
    SECTION("no X-Terraform-Get is an error that says so") {
        hostkeeper::test::Response response;
        response.status = 204;
        const std::string other = kModule + "/1.3.0/download";
        world.server.route("registry.localhost", other, response);
        const Result missing = world.hk({"module", "download", world.module(), "1.3.0"});
        CHECK(missing.exit_code == 1);
        CHECK_THAT(missing.err, Contains("X-Terraform-Get"));
        CHECK_THAT(missing.err, Contains(world.url("registry", other)));
        // A location known before stays in use, marked stale, while the registry misbehaves.
        world.server.route("registry.localhost", endpoint, response);
        const Json stale =
            world.hk_json({"module", "download", world.module(), "1.2.0", "--refresh"});
        CHECK(stale.at("source") == "stale");
        CHECK_THAT(stale.at("error").get<std::string>(), Contains("X-Terraform-Get"));
    }
    SECTION("an unknown version is 404: exit 3") {
        hostkeeper::test::Response gone;
        gone.status = 404;
        world.server.route("registry.localhost", kModule + "/9.9.9/download", gone);
        const Result unknown = world.hk({"module", "download", world.module(), "9.9.9"});
        CHECK(unknown.exit_code == 3);
        CHECK_THAT(unknown.err, Contains("has no version 9.9.9 of module acme/hello/null"));
    }
}

TEST_CASE("404 means no such module, provider or mirror entry: exit 3", "[registry]") {
    Registry world;
    world.serve_mirror();
    hostkeeper::test::Response gone;
    gone.status = 404;
    world.server.route("registry.localhost", "/v1/modules/acme/nope/null/versions", gone);
    world.server.route("registry.localhost", "/v1/providers/acme/nope/versions", gone);
    world.server.route("mirror.localhost", "/providers/" + world.host() + "/acme/nope/index.json",
                       gone);
    world.server.route("mirror.localhost", world.mirror_path("9.0.0.json"), gone);
    world.start();

    const Result module = world.hk({"module", "versions", world.host() + "/acme/nope/null"});
    CHECK(module.exit_code == 3);
    CHECK_THAT(module.err, Contains("has no module acme/nope/null"));
    const Result provider = world.hk({"provider", "versions", world.host() + "/acme/nope"});
    CHECK(provider.exit_code == 3);
    CHECK_THAT(provider.err, Contains("has no provider acme/nope"));
    const Result mirror = world.hk(
        {"provider", "versions", world.host() + "/acme/nope", "--mirror", world.mirror_base()});
    CHECK(mirror.exit_code == 3);
    CHECK_THAT(mirror.err, Contains("does not carry " + world.host() + "/acme/nope"));
    const Result version = world.hk(
        {"provider", "package", world.provider(), "9.0.0", "--mirror", world.mirror_base()});
    CHECK(version.exit_code == 3);
    CHECK_THAT(version.err, Contains("has no version 9.0.0"));
    const Result platform =
        world.hk({"provider", "package", world.provider(), "1.1.0", "--platform", "windows_386",
                  "--mirror", world.mirror_base()});
    CHECK(platform.exit_code == 3);
    CHECK_THAT(platform.err, Contains("has no windows_386 package"));
    CHECK_THAT(platform.err, Contains("linux_amd64"));

    // Remembered for negative_ttl: asked once.
    CHECK(world.hk({"module", "versions", world.host() + "/acme/nope/null"}).exit_code == 3);
    CHECK(world.server.count("registry.localhost", "/v1/modules/acme/nope/null/versions") == 1);
    CHECK(world.status("registry").at("not_found").get<int>() >= 3);
}

TEST_CASE("hostkeeper status shows the registry counters in text and in JSON", "[registry]") {
    Registry world;
    hostkeeper::test::Response gone;
    gone.status = 404;
    world.server.route("registry.localhost", "/v1/modules/acme/nope/null/versions", gone);
    world.start();
    REQUIRE(world.hk({"module", "versions", world.module()}).exit_code == 0);  // a miss: fetched
    REQUIRE(world.hk({"module", "versions", world.module()}).exit_code == 0);  // a hit
    REQUIRE(world.hk({"module", "versions", world.host() + "/acme/nope/null"}).exit_code == 3);

    const Json registry = world.status("registry");
    INFO(registry.dump(2));
    for (const char* key :
         {"entries", "documents", "not_found", "errors", "hits", "misses", "stale",
          "upstream_requests", "upstream_failures", "in_flight", "evictions"}) {
        CAPTURE(key);
        REQUIRE(registry.contains(key));
        REQUIRE(registry.at(key).is_number_integer());
    }
    CHECK(registry.at("entries") == 2);
    CHECK(registry.at("documents") == 1);
    CHECK(registry.at("not_found") == 1);
    CHECK(registry.at("hits") == 1);
    CHECK(registry.at("misses") == 2);
    CHECK(registry.at("upstream_requests") == 2);

    const Result human = world.hk({"status"});
    INFO(human.out);
    REQUIRE(human.exit_code == 0);
    const auto n = [&](const char* key) {
        return std::to_string(registry.at(key).get<long long>());
    };
    CHECK_THAT(human.out,
               Contains("registry cache: " + n("entries") + " entries (" + n("documents") +
                        " documents, " + n("not_found") + " not found, " + n("errors") +
                        " failures), " + n("hits") + " hits, " + n("misses") + " misses, " +
                        n("stale") + " stale answers, " + n("upstream_requests") +
                        " upstream requests (" + n("upstream_failures") + " failed), " +
                        n("in_flight") + " in flight, " + n("evictions") + " evictions\n"));
}

TEST_CASE("malformed documents are errors that name the URL and the problem", "[registry]") {
    Registry world;
    world.serve_mirror();
    world.start();
    struct Case {
        std::string host, path, body, content_type, expected;
        std::vector<std::string> args;
    };
    const std::string module = world.module();
    const std::string mirror = world.mirror_base();
    const std::vector<Case> cases{
        {"registry",
         kModule + "/versions",
         R"({"modules":[{"versions":"1.0.0"}]})",
         "application/json",
         "modules[0].versions is a JSON string, not an array",
         {"module", "versions", module}},
        {"registry",
         kModule + "/versions",
         R"({"things":[]})",
         "application/json",
         "no \"modules\"",
         {"module", "versions", module}},
        {"registry",
         kModule + "/versions",
         R"({"modules":[]})",
         "application/json",
         "\"modules\" is empty",
         {"module", "versions", module}},
        {"registry",
         kModule + "/versions",
         R"({"modules":[{"versions":[{"version":1}]}]})",
         "application/json",
         "modules[0].versions[0].version is a JSON number",
         {"module", "versions", module}},
        // A mirror must say application/json (Terraform's mirror client
        // insists); a registry's body is read as JSON whatever it is labelled.
        {"mirror",
         world.mirror_path("index.json"),
         R"({"versions":{"1.0.0":{}}})",
         "text/html",
         "the Content-Type is \"text/html\"",
         {"provider", "versions", world.provider(), "--mirror", mirror}},
        {"registry",
         kModule + "/versions",
         "<html><body>Sign in</body></html>",
         "text/html",
         "not valid JSON",
         {"module", "versions", module}},
        {"registry",
         kModule + "/versions",
         R"({"modules":)",
         "application/json",
         "not valid JSON",
         {"module", "versions", module}},
        {"registry",
         kProvider + "/versions",
         R"({"versions":{}})",
         "application/json",
         "\"versions\" is a JSON object, not an array",
         {"provider", "versions", world.provider()}},
        {"registry",
         kProvider + "/versions",
         R"({})",
         "application/json",
         "no \"versions\"",
         {"provider", "versions", world.provider()}},
        {"registry",
         kProvider + "/1.1.0/download/linux/amd64",
         R"({"os":"linux","arch":"amd64"})",
         "application/json",
         "no \"filename\"",
         {"provider", "package", world.provider(), "1.1.0", "--platform", "linux_amd64"}},
        {"mirror",
         world.mirror_path("index.json"),
         R"({"versions":["1.0.0"]})",
         "application/json",
         "\"versions\" is a JSON array, not an object",
         {"provider", "versions", world.provider(), "--mirror", mirror}},
        {"mirror",
         world.mirror_path("1.1.0.json"),
         R"({"archives":[]})",
         "application/json",
         "\"archives\" is a JSON array, not an object",
         {"provider", "package", world.provider(), "1.1.0", "--mirror", mirror}},
        {"mirror",
         world.mirror_path("1.1.0.json"),
         R"({"archives":{"linux_amd64":{"hashes":[]}}})",
         "application/json",
         "archives[\"linux_amd64\"].url",
         {"provider", "package", world.provider(), "1.1.0", "--mirror", mirror}},
    };
    for (const Case& c : cases) {
        hostkeeper::test::Response response;
        response.body = c.body;
        response.header("Content-Type", c.content_type);
        world.server.route(c.host + ".localhost", c.path, response);
        std::vector<std::string> args = c.args;
        args.push_back("--refresh");
        const Result result = world.hk(args);
        INFO(c.body << "\nstderr: " << result.err);
        CHECK(result.exit_code == 1);
        CHECK_THAT(result.err, Contains(c.expected));
        CHECK_THAT(result.err, Contains(world.url(c.host, c.path)));
    }
}

TEST_CASE("provider versions and packages from the registry, URLs resolved", "[registry]") {
    Registry world;
    world.start();
    store_token(world, world.host(), "registry-token");

    const Json versions = world.hk_json({"provider", "versions", world.provider()});
    INFO(versions.dump(2));
    CHECK(world.versions(versions) == Strings{"2.0.0-rc.1", "1.1.0", "1.0.0"});
    CHECK(versions.at("versions")[1].at("protocols") == Json::array({"5.0", "6.0"}));
    CHECK(versions.at("versions")[2].at("platforms") ==
          Json::array({"linux_amd64", "darwin_arm64"}));
    CHECK(versions.at("warnings") == Json::array({"acme/thing is deprecated"}));
    CHECK(world.versions(world.hk_json({"provider", "versions", world.provider(), "--constraint",
                                        ">= 1.0"})) == Strings{"1.1.0", "1.0.0"});
    const Result table = world.hk({"provider", "versions", world.provider()});
    CHECK_THAT(table.out, Contains("1.1.0"));
    CHECK_THAT(table.out, Contains("5.0,6.0"));
    CHECK_THAT(table.out, Contains("linux_amd64 darwin_arm64"));

    const Json package = world.hk_json(
        {"provider", "package", world.provider(), "1.1.0", "--platform", "linux_amd64"});
    INFO(package.dump(2));
    CHECK(package.at("filename") == "terraform-provider-thing_1.1.0_linux_amd64.zip");
    CHECK(package.at("download_url") ==
          world.url("registry", "/v1/files/terraform-provider-thing_1.1.0_linux_amd64.zip"));
    CHECK(package.at("shasums_url") == "https://cdn.localhost/thing_1.1.0_SHA256SUMS");
    CHECK(package.at("shasums_signature_url") ==
          world.url("registry", "/files/thing_1.1.0_SHA256SUMS.sig"));
    CHECK(package.at("hashes") == Json::array({"zh:" + kShasum}));
    CHECK(package.at("signing_keys").at("gpg_public_keys")[0].at("key_id") == "51852D87348FFC4C");
    CHECK(world.authorizations("registry", kProvider + "/1.1.0/download/linux/amd64") ==
          Strings{"Bearer registry-token"});
    const Result human =
        world.hk({"provider", "package", world.provider(), "1.1.0", "--platform", "linux_amd64"});
    CHECK_THAT(human.out, Contains("51852D87348FFC4C"));
    CHECK_THAT(human.out, Contains("zh:" + kShasum));

    const Result platform =
        world.hk({"provider", "package", world.provider(), "1.1.0", "--platform", "linux"});
    CHECK(platform.exit_code == 2);
    CHECK_THAT(platform.err, Contains("OS_ARCH"));
}

TEST_CASE("a mirror on a non-standard port gets the credentials of host:port, nobody else's",
          "[registry]") {
    Registry world;
    world.serve_mirror();
    world.start();
    const std::string mirror_host = world.World::host("mirror");
    store_token(world, mirror_host, "mirror-token");
    store_token(world, world.host(), "registry-token");
    store_token(world, "mirror.localhost", "portless-token");

    // Without the trailing slash: it is added.
    const std::string base = world.url("mirror", "/providers");
    const Json versions =
        world.hk_json({"provider", "versions", world.provider(), "--mirror", base});
    INFO(versions.dump(2));
    CHECK(world.versions(versions) == Strings{"1.2.0-beta", "1.1.0", "1.0.0"});
    CHECK(versions.at("mirror") == world.mirror_base());
    const Json package =
        world.hk_json({"provider", "package", world.provider(), "1.1.0", "--platform",
                       "linux_amd64", "--mirror", world.mirror_base()});
    INFO(package.dump(2));
    CHECK(package.at("download_url") ==
          world.url("mirror", world.mirror_path("terraform-provider-thing_1.1.0_linux_amd64.zip")));
    CHECK(package.at("filename") == "terraform-provider-thing_1.1.0_linux_amd64.zip");
    CHECK(package.at("hashes") == Json::array({"h1:abc=", "zh:" + kShasum}));
    CHECK(world
              .hk_json({"provider", "package", world.provider(), "1.1.0", "--platform",
                        "darwin_arm64", "--mirror", world.mirror_base()})
              .at("download_url") == "https://cdn.localhost/x/thing_darwin_arm64.zip");

    CHECK(world.authorizations("mirror", world.mirror_path("index.json")) ==
          Strings{"Bearer mirror-token"});
    CHECK(world.authorizations("mirror", world.mirror_path("1.1.0.json")) ==
          Strings{"Bearer mirror-token"});
    // The mirror replaces the registry: nothing was asked of it.
    CHECK(world.server.count("registry.localhost", kProvider + "/versions") == 0);

    SECTION("an http mirror is refused") {
        const Result http = world.hk(
            {"provider", "versions", world.provider(), "--mirror", "http://mirror.localhost/"});
        CHECK(http.exit_code == 2);
        CHECK_THAT(http.err, Contains("must use https"));
    }
}

TEST_CASE("mirror_url in config.toml is the default; --direct asks the registry", "[registry]") {
    Registry world;
    world.serve_mirror();
    world.start({}, "[registry]\nmirror_url = " + quoted(world.mirror_base()) + "\n");
    CHECK(world.versions(world.hk_json({"provider", "versions", world.provider()})) ==
          Strings{"1.2.0-beta", "1.1.0", "1.0.0"});
    CHECK(world.versions(world.hk_json({"provider", "versions", world.provider(), "--direct"})) ==
          Strings{"2.0.0-rc.1", "1.1.0", "1.0.0"});
}

TEST_CASE(
    "answers are cached; --refresh fetches; concurrent cold requests make one upstream request",
    "[registry]") {
    Registry world;
    hostkeeper::test::Response slow =
        json_response(R"({"modules":[{"versions":[{"version":"3.0.0"}]}]})");
    slow.delay = 500ms;
    world.server.route("registry.localhost", "/v1/modules/acme/slow/null/versions", slow);
    world.start();

    constexpr int kClients = 50;
    const auto [answers, failures] = at_once(kClients, [&] {
        return world.ask({{"op", "module_versions"}, {"module", world.host() + "/acme/slow/null"}});
    });
    int ok = 0;
    for (std::size_t i = 0; i < answers.size(); ++i) {
        INFO("client " << i << ": " << failures[i] << answers[i].dump());
        CHECK(failures[i].empty());
        if (answers[i].is_object() && answers[i].value("ok", false) &&
            answers[i].at("versions").size() == 1)
            ++ok;
    }
    CHECK(ok == kClients);
    CHECK(world.server.count("registry.localhost", "/v1/modules/acme/slow/null/versions") == 1);

    CHECK(world.hk_json({"module", "versions", world.host() + "/acme/slow/null"}).at("source") ==
          "cache");
    CHECK(world.server.count("registry.localhost", "/v1/modules/acme/slow/null/versions") == 1);
    CHECK(world.hk_json({"module", "versions", world.host() + "/acme/slow/null", "--refresh"})
              .at("source") == "network");
    CHECK(world.server.count("registry.localhost", "/v1/modules/acme/slow/null/versions") == 2);
    // Discovery was asked once for all of it.
    CHECK(world.fetches() == 1);

    const Json status = world.status("registry");
    INFO(status.dump(2));
    CHECK(status.at("upstream_requests") == 2);
    CHECK(status.at("hits") == 1);
    CHECK(status.at("misses") == kClients + 1);
    CHECK(status.at("in_flight") == 0);
    CHECK(world.cli({"flush", world.host()}).exit_code == 0);
    CHECK(world.status("registry").at("entries") == 0);
}

TEST_CASE("an unreachable registry: stale answers within stale_if_error, then the error",
          "[registry]") {
    Registry world;
    world.start({}, "[registry]\nversions_ttl = \"1s\"\nerror_ttl = \"1s\"\n");
    const Json fresh = world.hk_json({"module", "versions", world.module()});
    CHECK(fresh.at("source") == "network");

    world.server.route("registry.localhost", kModule + "/versions", json_response("{}", 503));
    std::this_thread::sleep_for(1100ms);
    const Result stale = world.hk({"module", "versions", world.module(), "--json"});
    INFO(stale.err);
    REQUIRE(stale.exit_code == 0);
    const Json answer = Json::parse(stale.out);
    CHECK(answer.at("source") == "stale");
    CHECK_THAT(answer.at("error").get<std::string>(), Contains("HTTP status 503"));
    CHECK(world.versions(answer) == world.versions(fresh));
    const Result human = world.hk({"module", "versions", world.module()});
    CHECK(human.exit_code == 0);
    CHECK_THAT(human.err, Contains("stale"));
    CHECK(world.status("registry").at("stale").get<int>() >= 2);

    // A registry never seen answers with the error.
    world.server.route("registry.localhost", "/v1/modules/acme/down/null/versions",
                       json_response("{}", 500));
    const Result down = world.hk({"module", "versions", world.host() + "/acme/down/null"});
    CHECK(down.exit_code == 1);
    CHECK_THAT(down.err, Contains("HTTP status 500"));
    const Json raw =
        world.ask({{"op", "module_versions"}, {"module", world.host() + "/acme/down/null"}});
    CHECK(raw.at("error").at("code") == "registry_failed");
    CHECK(raw.at("cached") == true);
}

TEST_CASE("a host without the service, and bad addresses, say so", "[registry]") {
    Registry world;
    world.serve("other", json_response(R"({"modules.v2":"/m2/"})"));
    world.serve("auth", json_response(R"({"login.v1":{"client":"x"}})"));
    world.start();
    const Result v2 =
        world.hk({"module", "versions", world.World::host("other") + "/acme/hello/null"});
    CHECK(v2.exit_code == 3);
    CHECK_THAT(v2.err, Contains("does not support modules.v1; it offers modules.v2"));
    const Result none =
        world.hk({"provider", "versions", world.World::host("auth") + "/acme/thing"});
    CHECK(none.exit_code == 3);
    CHECK_THAT(none.err, Contains("does not provide providers.v1"));

    const Result part = world.hk({"module", "versions", "acme/he llo/null"});
    CHECK(part.exit_code == 2);
    CHECK_THAT(part.err, Contains("NAME"));
    const Result parts = world.hk({"module", "versions", "acme/hello"});
    CHECK(parts.exit_code == 2);
    CHECK_THAT(parts.err, has("3 or 4 parts"));
    const Result host = world.hk({"provider", "versions", "ex_ample.com/acme/thing"});
    CHECK(host.exit_code == 2);
    const Result version = world.hk({"module", "download", world.module(), "1.2"});
    CHECK(version.exit_code == 2);
    CHECK_THAT(version.err, Contains("\"1.2\""));
    // The bad addresses were refused before any request: the server saw the two discoveries only.
    CHECK(world.server.requests().size() == 2);
}

TEST_CASE("credentials stay with their host: not along redirects, not to a service on another host",
          "[registry]") {
    Registry world;
    world.serve("other",
                json_response(R"({"modules.v1":")" + world.url("cdn", "/v1/modules/") + R"("})"));
    world.server.route("cdn.localhost", kModule + "/versions",
                       json_response(R"({"modules":[{"versions":[{"version":"1.0.0"}]}]})"));
    world.server.route("registry.localhost", "/v1/modules/acme/moved/null/versions",
                       redirect(world.url("cdn", kModule + "/versions")));
    world.start();
    store_token(world, world.host(), "registry-token");
    store_token(world, world.World::host("other"), "other-token");

    const Json moved = world.hk_json({"module", "versions", world.host() + "/acme/moved/null"});
    CHECK(moved.at("url") == world.url("cdn", kModule + "/versions"));
    CHECK(world.authorizations("registry", "/v1/modules/acme/moved/null/versions") ==
          Strings{"Bearer registry-token"});

    const Json elsewhere =
        world.hk_json({"module", "versions", world.World::host("other") + "/acme/hello/null"});
    CHECK(world.versions(elsewhere) == Strings{"1.0.0"});
    CHECK(world.authorizations("cdn", kModule + "/versions") == Strings{"(none)", "(none)"});

    // A service elsewhere that wants the token: the error says why it was not sent.
    world.server.route("cdn.localhost", "/v1/modules/acme/private/null/versions",
                       json_response("{}", 401));
    const Result denied =
        world.hk({"module", "versions", world.World::host("other") + "/acme/private/null"});
    CHECK(denied.exit_code == 1);
    CHECK_THAT(denied.err, Contains("HTTP status 401"));
    CHECK_THAT(denied.err, Contains("never to another host"));
}

TEST_CASE("a registry that is slow or huge is an error, and the daemon keeps serving",
          "[registry]") {
    Registry world;
    hostkeeper::test::Response hang;
    hang.hang = true;
    world.server.route("registry.localhost", "/v1/modules/acme/hang/null/versions", hang);
    world.server.route(
        "registry.localhost", "/v1/modules/acme/huge/null/versions",
        json_response(R"({"modules":[{"versions":[)" + std::string(9 * 1024 * 1024, ' ') + "]}]}"));
    world.start({}, "[registry]\ntimeout = \"2s\"\n");
    Spawned slow = spawn({bin("hostkeeper"), "--socket", world.socket().string(), "module",
                          "versions", world.host() + "/acme/hang/null"});
    std::this_thread::sleep_for(200ms);
    CHECK(world.hk_json({"module", "versions", world.module()}).at("source") == "network");
    CHECK(slow.running());  // answered while the slow registry still holds its request
    const Result timed_out = slow.wait();
    CHECK(timed_out.exit_code == 1);
    CHECK_THAT(timed_out.err, has("timed out"));

    const Result huge = world.hk({"module", "versions", world.host() + "/acme/huge/null"});
    CHECK(huge.exit_code == 1);
    CHECK_THAT(huge.err, Contains("larger than"));
}

namespace {

// A provider package made and hashed by Python's zipfile and hashlib: an
// implementation of zh: and h1: (dirhash Hash1) independent of the daemon's.
struct Package {
    std::string bytes;
    std::string zh;
    std::string h1;
};

Package make_package(const std::string& name) {
    const fs::path zip = test_root() / (name + ".zip");
    const std::string script = R"(
import base64, hashlib, sys, zipfile
files = [("terraform-provider-thing_v3.0.0", b"#!/bin/sh\nexit 1\n"), ("LICENSE", b"MIT\n"), ("docs/README.md", b"hi\n")]
with zipfile.ZipFile(sys.argv[1], "w", zipfile.ZIP_DEFLATED) as z:
    for n, d in files:
        z.writestr(n, d)
print("zh:" + hashlib.sha256(open(sys.argv[1], "rb").read()).hexdigest())
lines = "".join("%s  %s\n" % (hashlib.sha256(d).hexdigest(), n) for n, d in sorted(files))
print("h1:" + base64.b64encode(hashlib.sha256(lines.encode()).digest()).decode())
)";
    const Result made = run({"/usr/bin/python3", "-c", script, zip.string()});
    REQUIRE(made.exit_code == 0);
    Package package;
    package.bytes = read_file(zip);
    const auto newline = made.out.find('\n');
    package.zh = made.out.substr(0, newline);
    package.h1 = made.out.substr(newline + 1, made.out.find('\n', newline + 1) - newline - 1);
    return package;
}

hostkeeper::test::Response zip_response(const std::string& bytes) {
    hostkeeper::test::Response response;
    response.body = bytes;
    response.header("Content-Type", "application/zip");
    return response;
}

// Files in `dir` (names).
Strings files_in(const fs::path& dir) {
    Strings names;
    for (const auto& entry : fs::directory_iterator(dir))
        names.push_back(entry.path().filename().string());
    std::sort(names.begin(), names.end());
    return names;
}

}  // namespace

TEST_CASE("provider fetch: downloads, checks zh: and h1:, and sends no credentials to archives",
          "[registry]") {
    Registry world;
    const Package package = make_package("fetch-ok");
    const std::string filename = "terraform-provider-thing_3.0.0_linux_amd64.zip";
    // From the registry: the archive on another host, checked against the shasum.
    world.server.route("registry.localhost",
                       kProvider + "/3.0.0/download/linux/amd64", json_response(R"({
        "os":"linux","arch":"amd64","filename":"main.tf",
        "download_url":")" + world.url("cdn", "/files/" + filename) + R"(",
        "shasum":")" + package.zh.substr(3) + R"("})"));
    world.server.route("cdn.localhost", "/files/" + filename, zip_response(package.bytes));
    // From the mirror: the archive on the mirror's own host, checked against h1: and zh:.
    world.server.route("mirror.localhost", world.mirror_path("3.0.0.json"),
                       json_response(R"({"archives":{
        "linux_amd64":{"url":")" + filename +
                                     R"(","hashes":[")" + package.h1 + R"(",")" + package.zh +
                                     R"("]}}})"));
    world.server.route("mirror.localhost", world.mirror_path(filename),
                       zip_response(package.bytes));
    world.start();
    store_token(world, world.host(), "registry-token");
    store_token(world, world.World::host("cdn"), "cdn-token");
    store_token(world, world.World::host("mirror"), "mirror-token");

    const fs::path out = test_root() / "fetched";
    fs::create_directories(out / "registry");
    fs::create_directories(out / "mirror");
    // A symlink planted under the package's name: replaced, not followed.
    const fs::path victim = out / "victim.txt";
    std::ofstream(victim) << "keep me\n";
    fs::create_symlink(victim, out / "registry" / filename);
    const Result direct = world.hk({"provider", "fetch", world.provider(), "3.0.0", "--platform",
                                    "linux_amd64", "-o", (out / "registry").string()});
    INFO(direct.err);
    REQUIRE(direct.exit_code == 0);
    CHECK_THAT(direct.out, Contains("verified " + package.zh));
    // Written under Terraform's name for the package, not the publisher's "main.tf".
    CHECK(read_file(out / "registry" / filename) == package.bytes);
    CHECK(files_in(out / "registry") == Strings{filename});
    CHECK_FALSE(fs::is_symlink(out / "registry" / filename));
    CHECK(read_file(victim) == "keep me\n");

    const Json mirrored =
        world.hk_json({"provider", "fetch", world.provider(), "3.0.0", "--platform", "linux_amd64",
                       "--mirror", world.mirror_base(), "-o", (out / "mirror").string()});
    INFO(mirrored.dump(2));
    CHECK(mirrored.at("verified") == Json::array({package.zh, package.h1}));
    CHECK(mirrored.at("computed") == Json::array({package.zh, package.h1}));
    CHECK(mirrored.at("written") == (out / "mirror" / filename).string());
    CHECK(read_file(out / "mirror" / filename) == package.bytes);

    // Metadata went with the tokens of their hosts; archives with none at all,
    // not even the mirror's own.
    CHECK(world.authorizations("registry", kProvider + "/3.0.0/download/linux/amd64") ==
          Strings{"Bearer registry-token"});
    CHECK(world.authorizations("mirror", world.mirror_path("3.0.0.json")) ==
          Strings{"Bearer mirror-token"});
    CHECK(world.authorizations("cdn", "/files/" + filename) == Strings{"(none)"});
    CHECK(world.authorizations("mirror", world.mirror_path(filename)) == Strings{"(none)"});
    // The daemon's copies were collected.
    CHECK(files_in(world.socket().parent_path() / "downloads").empty());
}

TEST_CASE("provider fetch refuses a package that does not match, and leaves nothing behind",
          "[registry]") {
    Registry world;
    const Package package = make_package("fetch-bad");
    const Package other = make_package("fetch-other");  // same files, so the same h1:
    const std::string filename = "terraform-provider-thing_3.0.0_linux_amd64.zip";
    const std::string wrong_h1 = "h1:AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA=";
    const std::string wrong_zh = "zh:" + std::string(64, '0');
    const auto publish = [&](const std::string& version, const std::string& hashes,
                             const std::string& body) {
        world.server.route("mirror.localhost", world.mirror_path(version + ".json"),
                           json_response(R"({"archives":{"linux_amd64":{"url":")" + version +
                                         ".zip" + R"(","hashes":[)" + hashes + "]}}}"));
        world.server.route("mirror.localhost", world.mirror_path(version + ".zip"),
                           zip_response(body));
    };
    publish("3.0.1", "\"" + wrong_h1 + "\",\"" + package.zh + "\"", package.bytes);
    publish("3.0.2", "\"" + package.h1 + "\",\"" + wrong_zh + "\"", package.bytes);
    publish("3.0.3", "", package.bytes);
    // Only an h1: published: the zip must be unpacked to check it.
    publish("3.0.4", "\"" + wrong_h1 + "\"", "this is not a zip archive");
    world.start();
    CHECK(other.h1 == package.h1);

    const fs::path out = test_root() / "refused";
    fs::create_directories(out);
    const auto fetch = [&](const std::string& version) {
        return world.hk({"provider", "fetch", world.provider(), version, "--platform",
                         "linux_amd64", "--mirror", world.mirror_base(), "-o", out.string()});
    };
    const Result h1 = fetch("3.0.1");
    CHECK(h1.exit_code == 1);
    CHECK_THAT(h1.err, Contains("refusing"));
    CHECK_THAT(h1.err, Contains("h1: (of its contents) hash is " + package.h1));
    CHECK_THAT(h1.err, Contains(wrong_h1));
    const Result zh = fetch("3.0.2");
    CHECK(zh.exit_code == 1);
    CHECK_THAT(zh.err, Contains("hash is " + package.zh + ", but the publisher gave " + wrong_zh));
    const Result none = fetch("3.0.3");
    CHECK(none.exit_code == 1);
    CHECK_THAT(none.err, Contains("no zh: or h1: hash"));
    CHECK(world.server.count("mirror.localhost", world.mirror_path("3.0.3.zip")) == 0);
    const Result garbage = fetch("3.0.4");
    CHECK(garbage.exit_code == 1);
    CHECK_THAT(garbage.err, Contains("not a valid zip archive"));
    const Json raw = world.ask({{"op", "provider_fetch"},
                                {"provider", world.provider()},
                                {"version", "3.0.1"},
                                {"platform", "linux_amd64"},
                                {"mirror", world.mirror_base()}});
    CHECK(raw.at("error").at("code") == "verification_failed");

    CHECK(files_in(out).empty());
    CHECK(files_in(world.socket().parent_path() / "downloads").empty());
}

namespace {

// One request frame to `socket`, and the descriptors passed with the answer's
// first byte (closed), as a client with no knowledge of passed documents
// sees it: the frame's payload and how many descriptors came.
std::pair<Json, int> raw_ask(const fs::path& socket, const Json& request) {
    const int fd = ::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
    REQUIRE(fd >= 0);
    sockaddr_un address{};
    address.sun_family = AF_UNIX;
    std::strncpy(address.sun_path, socket.c_str(), sizeof address.sun_path - 1);
    REQUIRE(::connect(fd, reinterpret_cast<const sockaddr*>(&address), sizeof address) == 0);
    const std::string frame = hostkeeper::proto::encode_frame(request.dump());
    REQUIRE(::send(fd, frame.data(), frame.size(), MSG_NOSIGNAL) ==
            static_cast<ssize_t>(frame.size()));
    std::array<unsigned char, 4> header{};
    iovec part{header.data(), header.size()};
    alignas(cmsghdr) char control[CMSG_SPACE(sizeof(int) * 4)] = {};
    msghdr message{};
    message.msg_iov = &part;
    message.msg_iovlen = 1;
    message.msg_control = control;
    message.msg_controllen = sizeof control;
    REQUIRE(::recvmsg(fd, &message, MSG_CMSG_CLOEXEC | MSG_WAITALL) == 4);
    int passed = 0;
    for (cmsghdr* c = CMSG_FIRSTHDR(&message); c != nullptr; c = CMSG_NXTHDR(&message, c)) {
        for (std::size_t i = 0; i < (c->cmsg_len - CMSG_LEN(0)) / sizeof(int); ++i) {
            int received = -1;
            std::memcpy(&received, CMSG_DATA(c) + i * sizeof(int), sizeof received);
            CHECK((::fcntl(received, F_GET_SEALS) & F_SEAL_WRITE) != 0);
            ::close(received);
            ++passed;
        }
    }
    const std::size_t size = (std::size_t{header[0]} << 24) | (std::size_t{header[1]} << 16) |
                             (std::size_t{header[2]} << 8) | header[3];
    std::string body(size, '\0');
    REQUIRE(::recv(fd, body.data(), size, MSG_WAITALL) == static_cast<ssize_t>(size));
    ::close(fd);
    return {Json::parse(body), passed};
}

}  // namespace

TEST_CASE("a long versions list goes by reference when asked and reads the same", "[registry]") {
    Registry world;
    world.server.route("registry.localhost", "/v1/providers/acme/big/versions",
                       json_response(hostkeeper::test::long_provider_versions_document()));
    world.start();
    const std::string big = world.host() + "/acme/big";

    const Json first = world.hk_json({"provider", "versions", big});  // from the registry
    CHECK(first.at("source") == "network");
    const Json passed = world.hk_json({"provider", "versions", big});
    CHECK(passed.at("source") == "cache");
    CHECK_FALSE(passed.contains("document_fd"));
    REQUIRE(passed.at("versions").size() == 300);
    CHECK(passed.at("versions")[0].at("version") == "3.299.0");
    CHECK(passed.at("warnings") == Json::array({"big"}));

    // The same answer inline, member for member, in the same order.
    Json asked_inline = world.ask({{"op", "provider_versions"}, {"provider", big}});
    Json asked_passed =
        world.ask({{"op", "provider_versions"}, {"provider", big}, {"document_fd", true}});
    // The clock moves between the two asks: the ages may differ by a second.
    for (Json* answer : {&asked_inline, &asked_passed}) {
        REQUIRE(answer->contains("age_s"));
        REQUIRE(answer->contains("expires_in_s"));
        answer->erase("age_s");
        answer->erase("expires_in_s");
    }
    CHECK(asked_passed.dump() == asked_inline.dump());

    // On the wire: a small frame naming the document, and one sealed memfd.
    const auto [frame, descriptors] =
        raw_ask(world.socket(),
                {{"v", 1}, {"op", "provider_versions"}, {"provider", big}, {"document_fd", true}});
    CHECK(descriptors == 1);
    CHECK(frame.at("document_fd").at("bytes").get<std::size_t>() > 16 * 1024);
    CHECK_FALSE(frame.contains("versions"));
    const auto [plain, none] =
        raw_ask(world.socket(), {{"v", 1}, {"op", "provider_versions"}, {"provider", big}});
    CHECK(none == 0);  // a client that does not ask gets the list in the frame
    CHECK(plain.at("versions").size() == 300);
    // A short list stays in the frame even when asked for by reference.
    world.hk_json({"provider", "versions", world.provider()});
    const auto [short_list, no_file] = raw_ask(world.socket(), {{"v", 1},
                                                                {"op", "provider_versions"},
                                                                {"provider", world.provider()},
                                                                {"document_fd", true}});
    CHECK(no_file == 0);
    CHECK(short_list.at("versions").size() == 3);
}

}  // namespace test_registry
