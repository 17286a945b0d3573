// The listener's request targets: every route kind parses to what it names
// and route_path gives the path back; percent-escapes decode; anything that
// is not exactly a served path (dot segments, encoded slashes, control
// characters, empty segments, a trailing slash, too long, too deep) is a
// RouteError (a 404), never a route. A route below one extra first segment
// (the capability older setups put in every URL) is an OldPrefixTarget (a
// 410 that says to run terraform init again), never a route either.
#include <catch2/catch.hpp>
#include <string>
#include <vector>

#include "daemon/registry_cache/listener_routes.hpp"

namespace test_listener_routes {

using namespace hostkeeper::daemon::registry_cache;

namespace {

const std::string kSha = std::string(64, 'a');

Route parse_route(const std::string& path) {
    return parse_target("/" + path);
}

}  // namespace

TEST_CASE("listener routes: every kind parses and route_path gives the same path back",
          "[registry_cache]") {
    struct Case {
        std::string path;
        RouteKind kind;
    };
    const std::vector<Case> cases{
        {"v1/reg.example.com/modules/acme/net/aws/versions", RouteKind::module_versions},
        {"v1/reg.example.com/modules/acme/net/aws/1.2.3/download", RouteKind::module_download},
        {"v1/reg.example.com:8443/providers/acme/thing/versions", RouteKind::provider_versions},
        {"v1/reg.example.com/providers/acme/thing/1.0.0/download/linux/amd64",
         RouteKind::provider_package},
        {"v1/reg.example.com/providers/acme/thing/1.0.0/download/linux/amd64/SHA256SUMS",
         RouteKind::provider_shasums},
        {"v1/reg.example.com/providers/acme/thing/1.0.0/download/linux/amd64/SHA256SUMS.sig",
         RouteKind::provider_signature},
        {"archives/providers/" + kSha + "/terraform-provider-thing_1.0.0_linux_amd64.zip",
         RouteKind::provider_archive},
        {"archives/modules/" + kSha + "/net.tar.gz", RouteKind::module_archive},
        {"mirror/registry.terraform.io/hashicorp/null/index.json", RouteKind::mirror_index},
        {"mirror/registry.terraform.io/hashicorp/null/3.2.1.json", RouteKind::mirror_version},
    };
    for (const Case& c : cases) {
        INFO(c.path);
        const Route route = parse_route(c.path);
        CHECK(route.kind == c.kind);
        CHECK(route_path(route) == c.path);
    }
}

TEST_CASE("listener routes: the fields of each kind", "[registry_cache]") {
    const Route module = parse_route("v1/reg.example.com/modules/acme/net/aws/1.2.3/download");
    CHECK(module.host == "reg.example.com");
    CHECK(module.name_space == "acme");
    CHECK(module.name == "net");
    CHECK(module.system == "aws");
    CHECK(module.version == "1.2.3");

    // The provider package: 9 segments; SHA256SUMS 10.
    const Route package =
        parse_route("v1/reg.example.com/providers/acme/thing/1.0.0/download/darwin/arm64");
    CHECK(package.kind == RouteKind::provider_package);
    CHECK(package.name_space == "acme");
    CHECK(package.name == "thing");
    CHECK(package.version == "1.0.0");
    CHECK(package.os == "darwin");
    CHECK(package.arch == "arm64");

    const Route archive = parse_route("archives/providers/" + kSha + "/p.zip");
    CHECK(archive.key == "providers/" + kSha);
    CHECK(archive.filename == "p.zip");

    const Route mirror = parse_route("mirror/registry.terraform.io/hashicorp/null/3.2.1.json");
    CHECK(mirror.host == "registry.terraform.io");
    CHECK(mirror.version == "3.2.1");

    // The query is ignored (go-getter's ?archive=zip on an archive URL).
    CHECK(parse_target("/archives/modules/" + kSha + "/m.zip?archive=zip").filename == "m.zip");
}

TEST_CASE("listener routes: segments are percent-decoded", "[registry_cache]") {
    const Route route = parse_route("v1/reg.example.com%3A8443/modules/ac%6De/net/aws/versions");
    CHECK(route.host == "reg.example.com:8443");
    CHECK(route.name_space == "acme");
    CHECK(parse_target("/%61rchives/modules/" + kSha + "/a.zip").kind == RouteKind::module_archive);
}

TEST_CASE("listener routes: what is not exactly a served path is refused", "[registry_cache]") {
    const std::string module = "v1/reg.example.com/modules/acme/net/aws/versions";
    const std::vector<std::string> refused{
        "",
        "CAP",
        "/",
        "/CAP",
        "/",
        "CAP/" + module,  // not a path
        "/" + module + "/",
        "/v1/reg.example.com/modules/acme//aws/versions",
        "/v1/reg.example.com/modules/acme/../aws/versions",
        "/v1/reg.example.com/modules/acme/./aws/versions",
        "/v1/reg.example.com/modules/acme/%2e%2e/aws/versions",
        "/v1/reg.example.com/modules/acme/%2E/aws/versions",
        "/v1/reg.example.com/modules/acme/a%2Fb/aws/versions",
        "/v1/reg.example.com/modules/acme/a%2fb/aws/versions",
        "/v1/reg.example.com/modules/acme/a%5Cb/aws/versions",
        "/v1/reg.example.com/modules/acme/a\\b/aws/versions",
        "/v1/reg.example.com/modules/acme/a%00b/aws/versions",
        "/v1/reg.example.com/modules/acme/a%0d%0ab/aws/versions",
        "/v1/reg.example.com/modules/acme/a%7Fb/aws/versions",
        "/v1/reg.example.com/modules/acme/a\tb/aws/versions",
        "/v1/reg.example.com/modules/acme/a%4/aws/versions",
        "/v1/reg.example.com/modules/acme/a%zz/aws/versions",
        "/v1/reg.example.com/modules/acme/net/aws/%",
        "/v1/reg.example.com/modules/acme/net/aws",
        "/v1/reg.example.com/modules/acme/net/aws/1.0.0/versions",
        "/v1/reg.example.com/modules/acme/net/aws/1.0.0/download/extra",
        "/v1/reg.example.com/things/acme/net/versions",
        "/v1/reg.example.com/providers/acme/thing/1.0.0/download/linux",
        "/v1/reg.example.com/providers/acme/thing/1.0.0/fetch/linux/amd64",
        "/v1/reg.example.com/providers/acme/thing/1.0.0/download/linux/amd64/OTHER",
        "/v1/reg.example.com/providers/acme/thing/1.0.0/download/linux/amd64/SHA256SUMS/x",
        "/v2/reg.example.com/modules/acme/net/aws/versions",
        "/archives/providers/" + std::string(63, 'a') + "/p.zip",
        "/archives/providers/" + std::string(64, 'A') + "/p.zip",
        "/archives/providers/" + std::string(64, 'g') + "/p.zip",
        "/archives/other/" + kSha + "/p.zip",
        "/archives/providers/" + kSha,
        "/archives/providers/" + kSha + "/..",
        "/mirror/registry.terraform.io/hashicorp/null/3.2.1",
        "/mirror/registry.terraform.io/hashicorp/null/.json",
        "/mirror/registry.terraform.io/hashicorp/null/x/index.json",
        "/other/path",
        "/" + std::string(4096, 'a'),
        "/a/b/c/d/e/f/g/h/i/j/k/l/m/n",
    };
    for (const std::string& target : refused) {
        INFO("target: " << target);
        CHECK_THROWS_AS(parse_target(target), RouteError);
    }
    // At the limits: 12 segments in all is the most, a 4096-byte target the longest.
    CHECK_THROWS_AS(
        parse_target("/CAP/v1/h/providers/n/t/1.0.0/download/linux/amd64/SHA256SUMS/x/y"),
        RouteError);
    const std::string long_ok = "/archives/modules/" + kSha + "/";
    CHECK_NOTHROW(parse_target(long_ok + std::string(4096 - long_ok.size(), 'z')));
    CHECK_THROWS_AS(parse_target(long_ok + std::string(4097 - long_ok.size(), 'z')), RouteError);
}

TEST_CASE("listener routes: an older setup's capability-prefixed URL is never a route",
          "[registry_cache]") {
    const std::string old = "/AbCdEfGhIjKlMnOpQrStUvWxYz0123456789-_AbCdE/";
    for (const std::string& path : {
             std::string("v1/reg.example.com/modules/acme/net/aws/versions"),
             std::string("v1/reg.example.com/modules/acme/net/aws/1.2.3/download"),
             std::string("v1/reg.example.com/providers/acme/thing/versions"),
             std::string("v1/reg.example.com/providers/acme/thing/1.0.0/download/linux/amd64"),
             std::string(
                 "v1/reg.example.com/providers/acme/thing/1.0.0/download/linux/amd64/SHA256SUMS"),
             "archives/providers/" + kSha + "/p.zip",
             std::string("mirror/registry.terraform.io/hashicorp/null/index.json"),
         }) {
        INFO("path: " << path);
        CHECK_NOTHROW(parse_target("/" + path));
        // Whatever the first segment: the daemon keeps no capability to compare.
        CHECK_THROWS_MATCHES(parse_target(old + path), OldPrefixTarget,
                             Catch::Message("the registry cache's URLs changed: run `terraform "
                                            "init` again"));
        CHECK_THROWS_AS(parse_target("/CAP/" + path), OldPrefixTarget);
    }
    // Below a prefix, what is no route is a plain RouteError (a 404).
    for (const std::string& target :
         {old + "other/path", old + "v1/reg.example.com/modules/acme//aws/versions",
          "/x" + old + "v1/reg.example.com/modules/acme/net/aws/versions"}) {
        INFO("target: " << target);
        try {
            (void)parse_target(target);
            FAIL("accepted");
        } catch (const OldPrefixTarget&) {
            FAIL("an OldPrefixTarget");
        } catch (const RouteError&) {
        }
    }
}

}  // namespace test_listener_routes
