// Which hosts the registry cache routes and the files that say so: the tfrc
// text (only routed hosts, registry services at the listener, every other
// service verbatim and safely quoted), when the files must be rewritten, what
// an outage changes (nothing for a routed host), and what a restart keeps.
#include <sys/stat.h>
#include <unistd.h>

#include <catch2/catch.hpp>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <string>

#include "daemon/registry_cache/routed_hosts.hpp"
#include "proto/json.hpp"

namespace test_routed_hosts {

using namespace hostkeeper::daemon::registry_cache;
using hostkeeper::proto::Json;
using hostkeeper::proto::parse_json;
namespace fs = std::filesystem;

namespace {

const std::string kBase = "http://127.0.0.1:47123/";

RoutedHost with(const std::string& services) {
    RoutedHost host;
    host.services = parse_json(services);
    host.reason = offers_registry(*host.services) ? "" : "offers neither";
    return host;
}

struct TempDir {
    TempDir() {
        std::string pattern = (fs::temp_directory_path() / "hk-routed-XXXXXX").string();
        path = ::mkdtemp(pattern.data());
    }
    ~TempDir() { fs::remove_all(path); }
    fs::path path;
};

std::string slurp(const fs::path& file) {
    std::ifstream in(file);
    return std::string(std::istreambuf_iterator<char>(in), {});
}

unsigned mode_of(const fs::path& file) {
    struct stat st {};
    REQUIRE(::stat(file.c_str(), &st) == 0);
    return st.st_mode & 07777U;
}

}  // namespace

TEST_CASE("routed hosts: the tfrc holds routed hosts only, registries at the listener",
          "[registry_cache]") {
    std::map<std::string, RoutedHost> hosts;
    hosts["tfe.example.com"] = with(R"({
        "modules.v1": "/api/registry/v1/modules/",
        "providers.v1": "/api/registry/v1/providers/",
        "tfe.v2": "https://tfe.example.com/api/v2/",
        "tfe.v2.1": "https://tfe.example.com/api/v2/",
        "login.v1": {"client": "terraform-cli", "grant_types": ["authz_code"],
                     "authz": "/app/oauth2/authorize", "token": "/oauth2/token", "ports": [10000, 10010]}})");
    hosts["other.example.com"] = with(R"({"tfe.v2": "https://other.example.com/api/v2/"})");
    RoutedHost undiscovered;
    undiscovered.named = true;
    undiscovered.reason = "not discovered yet";
    hosts["named.example.com"] = undiscovered;

    const std::string text = render_tfrc(hosts, kBase);
    INFO(text);
    CHECK_THAT(text, Catch::StartsWith(kTfrcHeader));
    CHECK_THAT(text, Catch::Contains("host \"tfe.example.com\" {\n  services = {\n"));
    CHECK_THAT(text, Catch::Contains("    \"modules.v1\" = \"" + kBase +
                                     "v1/tfe.example.com/modules/\"\n"));
    CHECK_THAT(text, Catch::Contains("    \"providers.v1\" = \"" + kBase +
                                     "v1/tfe.example.com/providers/\"\n"));
    CHECK_THAT(text, Catch::Contains("    \"tfe.v2\" = \"https://tfe.example.com/api/v2/\"\n"));
    CHECK_THAT(text, Catch::Contains("    \"tfe.v2.1\" = \"https://tfe.example.com/api/v2/\"\n"));
    // login.v1 as an HCL object, its lists and numbers as given.
    CHECK_THAT(text, Catch::Contains("    \"login.v1\" = {\n"
                                     "      \"client\" = \"terraform-cli\"\n"
                                     "      \"grant_types\" = [\"authz_code\"]\n"
                                     "      \"authz\" = \"/app/oauth2/authorize\"\n"
                                     "      \"token\" = \"/oauth2/token\"\n"
                                     "      \"ports\" = [10000, 10010]\n"
                                     "    }\n"));
    CHECK_THAT(text, !Catch::Contains("/api/registry/v1/"));
    CHECK_THAT(text, !Catch::Contains("other.example.com"));
    CHECK_THAT(text, !Catch::Contains("named.example.com"));
}

TEST_CASE("routed hosts: strings are escaped, template sequences left out", "[registry_cache]") {
    std::map<std::string, RoutedHost> hosts;
    hosts["a.example.com"] = with(R"({
        "modules.v1": "/m/",
        "quoted.v1": "https://a.example.com/\"x\\y",
        "template.v1": "https://a.example.com/${file(\"/etc/passwd\")}",
        "directive.v1": "https://a.example.com/%{if true}x%{endif}",
        "newline.v1": "https://a.example.com/\nhost \"evil\" {",
        "float.v1": 1.5,
        "null.v1": null})");
    const std::string text = render_tfrc(hosts, kBase);
    INFO(text);
    CHECK_THAT(text, Catch::Contains(R"(    "quoted.v1" = "https://a.example.com/\"x\\y")"));
    CHECK_THAT(text, !Catch::Contains("template.v1"));
    CHECK_THAT(text, !Catch::Contains("${"));
    CHECK_THAT(text, !Catch::Contains("directive.v1"));
    CHECK_THAT(text, !Catch::Contains("newline.v1"));
    CHECK_THAT(text, !Catch::Contains("evil"));
    CHECK_THAT(text, !Catch::Contains("float.v1"));
    CHECK_THAT(text, !Catch::Contains("null.v1"));
    CHECK_THAT(text,
               Catch::Contains("\"modules.v1\" = \"" + kBase + "v1/a.example.com/modules/\""));
}

TEST_CASE("routed hosts: discovered says when the files must be rewritten", "[registry_cache]") {
    const TempDir dir;
    RoutedHosts routed({"named.example.com"}, dir.path / "state.json", {}, kBase);
    CHECK_FALSE(routed.routed("named.example.com"));
    const Json registry = parse_json(R"({"modules.v1":"/m/"})");
    const Json more = parse_json(R"({"modules.v1":"/m/","tfe.v2":"/api/v2/"})");
    const Json none = parse_json(R"({"tfe.v2":"/api/v2/"})");

    CHECK(routed.discovered("named.example.com", registry));  // now routed
    CHECK(routed.routed("named.example.com"));
    CHECK_FALSE(routed.discovered("named.example.com", registry));  // the same
    CHECK(routed.discovered("named.example.com", more));            // a service more
    CHECK(routed.discovered("named.example.com", none));            // no longer routed
    CHECK_FALSE(routed.routed("named.example.com"));
    CHECK_FALSE(routed.discovered("named.example.com", parse_json(R"({"tfe.v2":"/other/"})")));

    // A learned host offering nothing: known, not routed, nothing to write.
    CHECK_FALSE(routed.discovered("learned.example.com", none));
    CHECK(routed.known("learned.example.com"));
    CHECK_FALSE(routed.routed("learned.example.com"));
}

TEST_CASE("routed hosts: a failed discovery never unroutes a routed host", "[registry_cache]") {
    const TempDir dir;
    RoutedHosts routed({"a.example.com", "b.example.com"}, dir.path / "state.json", {}, kBase);
    routed.discovered("a.example.com", parse_json(R"({"providers.v1":"/p/"})"));
    routed.failed("a.example.com", "connection refused");
    CHECK(routed.routed("a.example.com"));
    routed.failed("b.example.com", "connection refused");
    CHECK_FALSE(routed.routed("b.example.com"));
    const Json status = routed.status();
    REQUIRE(status.size() == 2);
    CHECK(status.at(0).at("routed") == true);
    CHECK(status.at(0).at("reason").is_null());
    CHECK(status.at(1).at("routed") == false);
    CHECK(status.at(1).at("reason") == "discovery failed: connection refused");
    CHECK(status.at(1).at("source") == "named");
}

TEST_CASE("routed hosts: write makes 0600 files; load keeps learned hosts, drops unnamed ones",
          "[registry_cache]") {
    const TempDir dir;
    const fs::path state = dir.path / "state" / "registry-cache-hosts.json";
    const fs::path tfrc1 = dir.path / "tf" / "hostkeeper.tfrc";
    const fs::path tfrc2 = dir.path / "tofu" / "hostkeeper.tfrc";
    const Json registry = parse_json(R"({"modules.v1":"/m/"})");
    {
        RoutedHosts routed({"named.example.com", "dropped.example.com"}, state, {tfrc1, tfrc2},
                           kBase);
        routed.discovered("named.example.com", registry);
        routed.discovered("dropped.example.com", registry);
        routed.discovered("learned.example.com", registry);
        ::umask(022);
        routed.write();
    }
    for (const fs::path& file : {state, tfrc1, tfrc2}) {
        INFO(file);
        CHECK(mode_of(file) == 0600U);
    }
    CHECK(slurp(tfrc1) == slurp(tfrc2));
    CHECK_THAT(slurp(tfrc1), Catch::Contains("host \"learned.example.com\""));

    // Restarted after setup stopped naming dropped.example.com.
    RoutedHosts again({"named.example.com"}, state, {tfrc1}, kBase);
    CHECK(again.load().empty());
    CHECK(again.routed("named.example.com"));
    CHECK(again.routed("learned.example.com"));
    CHECK_FALSE(again.known("dropped.example.com"));
    CHECK_FALSE(again.routed("dropped.example.com"));

    // A state file that is not ours starts empty and says why.
    std::ofstream(state) << "[]";
    RoutedHosts broken({"named.example.com"}, state, {tfrc1}, kBase);
    CHECK_FALSE(broken.load().empty());
    CHECK_FALSE(broken.routed("named.example.com"));
}

}  // namespace test_routed_hosts
