// The listener's request targets: every route kind parses to what it names
// and route_path gives the path back; percent-escapes decode; anything that
// is not exactly a served path (dot segments, encoded slashes, control
// characters, empty segments, a trailing slash, too long, too deep) is a
// RouteError (a 404), never a route.
#include <catch2/catch.hpp>
#include <string>
#include <vector>

#include "daemon/registry_cache/listener_routes.hpp"

using namespace hostkeeper::daemon::registry_cache;

namespace {

const std::string kSha = std::string(64, 'a');

Route parse_route(const std::string& below_capability) {
    const ParsedTarget parsed = parse_target("/CAP/" + below_capability);
    CHECK(parsed.capability == "CAP");
    return parsed.route;
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

    // The provider package: 9 segments after the capability; SHA256SUMS 10.
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
    CHECK(parse_target("/CAP/archives/modules/" + kSha + "/m.zip?archive=zip").route.filename ==
          "m.zip");
}

TEST_CASE("listener routes: segments are percent-decoded", "[registry_cache]") {
    const Route route = parse_route("v1/reg.example.com%3A8443/modules/ac%6De/net/aws/versions");
    CHECK(route.host == "reg.example.com:8443");
    CHECK(route.name_space == "acme");
    CHECK(parse_target("/C%41P/archives/modules/" + kSha + "/a.zip").capability == "CAP");
}

TEST_CASE("listener routes: what is not exactly a served path is refused", "[registry_cache]") {
    const std::string module = "v1/reg.example.com/modules/acme/net/aws/versions";
    const std::vector<std::string> refused{
        "",
        "CAP",
        "/",
        "/CAP",
        "/CAP/",
        "CAP/" + module,  // not a path
        "/CAP/" + module + "/",
        "/CAP/v1/reg.example.com/modules/acme//aws/versions",
        "/CAP/v1/reg.example.com/modules/acme/../aws/versions",
        "/CAP/v1/reg.example.com/modules/acme/./aws/versions",
        "/CAP/v1/reg.example.com/modules/acme/%2e%2e/aws/versions",
        "/CAP/v1/reg.example.com/modules/acme/%2E/aws/versions",
        "/CAP/v1/reg.example.com/modules/acme/a%2Fb/aws/versions",
        "/CAP/v1/reg.example.com/modules/acme/a%2fb/aws/versions",
        "/CAP/v1/reg.example.com/modules/acme/a%5Cb/aws/versions",
        "/CAP/v1/reg.example.com/modules/acme/a\\b/aws/versions",
        "/CAP/v1/reg.example.com/modules/acme/a%00b/aws/versions",
        "/CAP/v1/reg.example.com/modules/acme/a%0d%0ab/aws/versions",
        "/CAP/v1/reg.example.com/modules/acme/a%7Fb/aws/versions",
        "/CAP/v1/reg.example.com/modules/acme/a\tb/aws/versions",
        "/CAP/v1/reg.example.com/modules/acme/a%4/aws/versions",
        "/CAP/v1/reg.example.com/modules/acme/a%zz/aws/versions",
        "/CAP/v1/reg.example.com/modules/acme/net/aws/%",
        "/CAP/v1/reg.example.com/modules/acme/net/aws",
        "/CAP/v1/reg.example.com/modules/acme/net/aws/1.0.0/versions",
        "/CAP/v1/reg.example.com/modules/acme/net/aws/1.0.0/download/extra",
        "/CAP/v1/reg.example.com/things/acme/net/versions",
        "/CAP/v1/reg.example.com/providers/acme/thing/1.0.0/download/linux",
        "/CAP/v1/reg.example.com/providers/acme/thing/1.0.0/fetch/linux/amd64",
        "/CAP/v1/reg.example.com/providers/acme/thing/1.0.0/download/linux/amd64/OTHER",
        "/CAP/v1/reg.example.com/providers/acme/thing/1.0.0/download/linux/amd64/SHA256SUMS/x",
        "/CAP/v2/reg.example.com/modules/acme/net/aws/versions",
        "/CAP/archives/providers/" + std::string(63, 'a') + "/p.zip",
        "/CAP/archives/providers/" + std::string(64, 'A') + "/p.zip",
        "/CAP/archives/providers/" + std::string(64, 'g') + "/p.zip",
        "/CAP/archives/other/" + kSha + "/p.zip",
        "/CAP/archives/providers/" + kSha,
        "/CAP/archives/providers/" + kSha + "/..",
        "/CAP/mirror/registry.terraform.io/hashicorp/null/3.2.1",
        "/CAP/mirror/registry.terraform.io/hashicorp/null/.json",
        "/CAP/mirror/registry.terraform.io/hashicorp/null/x/index.json",
        "/CAP/other/path",
        "/CAP/" + std::string(4096, 'a'),
        "/CAP/a/b/c/d/e/f/g/h/i/j/k/l/m/n",
    };
    for (const std::string& target : refused) {
        INFO("target: " << target);
        CHECK_THROWS_AS(parse_target(target), RouteError);
    }
    // At the limits: 12 segments in all is the most, a 4096-byte target the longest.
    CHECK_THROWS_AS(
        parse_target("/CAP/v1/h/providers/n/t/1.0.0/download/linux/amd64/SHA256SUMS/x/y"),
        RouteError);
    const std::string long_ok = "/CAP/archives/modules/" + kSha + "/";
    CHECK_NOTHROW(parse_target(long_ok + std::string(4096 - long_ok.size(), 'z')));
    CHECK_THROWS_AS(parse_target(long_ok + std::string(4097 - long_ok.size(), 'z')), RouteError);
}
