// Registry and network-mirror documents, module download locations and the
// mirror URL: the pure parts of the registry clients.
#include <catch2/catch.hpp>
#include <optional>
#include <string>
#include <vector>

#include "daemon/registry/mirror.hpp"
#include "daemon/registry/registry_documents.hpp"
#include "proto/error.hpp"
#include "proto/semver.hpp"

namespace test_registry_documents {

using namespace hostkeeper;
using daemon::registry::allowed_versions;
using daemon::registry::make_mirror;
using daemon::registry::newest_release;
using daemon::registry::parse_mirror_index;
using daemon::registry::parse_mirror_version;
using daemon::registry::parse_module_versions;
using daemon::registry::parse_provider_package;
using daemon::registry::parse_provider_versions;
using daemon::registry::resolve_module_location;
using daemon::registry::VersionList;
using proto::Json;

namespace {

const std::string kShasum = "5f9c7aa76b7c34d722fc9123208e26b22d60440cb47150dd04733b9b94f4541a";
const std::string kPackageUrl =
    "https://r.example/v1/providers/acme/thing/1.0.0/download/linux/amd64";
const std::string kMirrorVersionUrl = "https://m.example/p/r.example/acme/thing/1.0.0.json";
const std::string kEndpoint = "https://r.example/v1/modules/a/b/c/1.0.0/download";

std::vector<std::string> version_strings(const VersionList& list) {
    std::vector<std::string> out;
    for (const proto::SemVer& v : list.versions) out.push_back(v.to_string());
    return out;
}

std::vector<std::string> body_versions(const Json& versions) {
    std::vector<std::string> out;
    for (const Json& entry : versions) out.push_back(entry.at("version").get<std::string>());
    return out;
}

std::string module_versions_body(const std::string& versions) {
    return R"({"modules":[{"source":"a/b/c","versions":[)" + versions + "]}]}";
}

// A provider package document with `field` replaced by `value` (raw JSON), or left out when `value`
// is empty.
std::string package_body(const std::string& field = "", const std::string& value = "") {
    Json doc = {{"protocols", {"5.0"}},
                {"os", "linux"},
                {"arch", "amd64"},
                {"filename", "terraform-provider-thing_1.0.0_linux_amd64.zip"},
                {"download_url", "/files/terraform-provider-thing_1.0.0_linux_amd64.zip"},
                {"shasums_url", "../../../SHA256SUMS"},
                {"shasums_signature_url", "https://sig.example/SHA256SUMS.sig"},
                {"shasum", kShasum},
                {"signing_keys", {{"gpg_public_keys", Json::array()}}}};
    if (!field.empty()) {
        if (value.empty()) {
            doc.erase(field);
        } else {
            doc[field] = Json::parse(value);
        }
    }
    return doc.dump();
}

proto::ErrorCode mirror_error(const std::string& url) {
    try {
        make_mirror(url);
    } catch (const proto::Error& e) {
        return e.code();
    }
    FAIL("make_mirror(\"" << url << "\") did not throw");
    return proto::ErrorCode::internal;
}

}  // namespace

// ---- modules.v1 versions
// -------------------------------------------------------------------------------------------

TEST_CASE("module versions: newest first, pre-releases below their release", "[daemon][registry]") {
    const VersionList list = parse_module_versions(module_versions_body(
        R"({"version":"1.0.0"},{"version":"2.0.0-rc.1"},{"version":"1.10.0"},{"version":"2.0.0"},)"
        R"({"version":"1.2.0"},{"version":"2.0.0-beta"},{"version":"0.9.1"})"));
    const std::vector<std::string> expected{"2.0.0", "2.0.0-rc.1", "2.0.0-beta", "1.10.0",
                                            "1.2.0", "1.0.0",      "0.9.1"};
    CHECK(version_strings(list) == expected);
    CHECK(body_versions(list.body.at("versions")) == expected);
    CHECK(list.body.at("versions")[0] == Json{{"version", "2.0.0"}});
    CHECK_FALSE(list.body.contains("invalid"));
}

TEST_CASE("module versions: a leading v is dropped, invalid versions are listed apart",
          "[daemon][registry]") {
    const VersionList list = parse_module_versions(module_versions_body(
        R"({"version":"v1.2.3"},{"version":"1.2"},{"version":"latest"},{"version":"1.0.0"},{"version":" 1.1.0"})"));
    CHECK(version_strings(list) == std::vector<std::string>{"1.2.3", "1.0.0"});
    CHECK(body_versions(list.body.at("versions")) == std::vector<std::string>{"1.2.3", "1.0.0"});
    CHECK(list.body.at("invalid") == Json::array({"1.2", "latest", " 1.1.0"}));
}

TEST_CASE("module versions: an empty list is an answer", "[daemon][registry]") {
    const VersionList list = parse_module_versions(module_versions_body(""));
    CHECK(list.versions.empty());
    CHECK(list.body.at("versions") == Json::array());
}

TEST_CASE("module versions: malformed documents are errors naming the JSON path",
          "[daemon][registry]") {
    CHECK_THROWS_WITH(parse_module_versions("{"), Catch::Contains("not valid JSON"));
    CHECK_THROWS_WITH(parse_module_versions("[]"), Catch::Contains("JSON array, not an object"));
    CHECK_THROWS_WITH(parse_module_versions("{}"), Catch::Contains("no \"modules\""));
    CHECK_THROWS_WITH(parse_module_versions(R"({"modules":{}})"),
                      Catch::Contains("\"modules\" is a JSON object"));
    CHECK_THROWS_WITH(parse_module_versions(R"({"modules":[]})"),
                      Catch::Contains("\"modules\" is empty"));
    CHECK_THROWS_WITH(parse_module_versions(R"({"modules":[7]})"),
                      Catch::Contains("modules[0] is not an object"));
    CHECK_THROWS_WITH(parse_module_versions(R"({"modules":[{}]})"),
                      Catch::Contains("no modules[0].versions"));
    CHECK_THROWS_WITH(parse_module_versions(R"({"modules":[{"versions":"1.0.0"}]})"),
                      Catch::Contains("modules[0].versions is a JSON string, not an array"));
    CHECK_THROWS_WITH(parse_module_versions(module_versions_body(R"({"version":"1.0.0"},"1.1.0")")),
                      Catch::Contains("modules[0].versions[1] is not an object"));
    CHECK_THROWS_WITH(
        parse_module_versions(module_versions_body(R"({"version":"1.0.0"},{"version":2})")),
        Catch::Contains("modules[0].versions[1].version is a JSON number, not a string"));
    CHECK_THROWS_WITH(parse_module_versions(module_versions_body(R"({"v":"1.0.0"})")),
                      Catch::Contains("no modules[0].versions[0].version"));
}

// ---- providers.v1 versions
// -----------------------------------------------------------------------------------------

TEST_CASE("provider versions: protocols, os_arch platforms and warnings", "[daemon][registry]") {
    const VersionList list = parse_provider_versions(R"({
        "id": "acme/thing",
        "versions": [
            {"version": "1.0.0", "protocols": ["4.0", "5.1"],
             "platforms": [{"os": "linux", "arch": "amd64"}, {"os": "darwin", "arch": "arm64"}]},
            {"version": "v2.0.0", "protocols": ["6.0"], "platforms": []},
            {"version": "2.0.0-alpha"},
            {"version": "nightly", "protocols": ["5.0"]}
        ],
        "warnings": ["This provider is deprecated.", "Use acme/other."]
    })");
    CHECK(version_strings(list) == std::vector<std::string>{"2.0.0", "2.0.0-alpha", "1.0.0"});
    const Json& versions = list.body.at("versions");
    REQUIRE(versions.size() == 3);
    CHECK(versions[0] ==
          Json{{"version", "2.0.0"}, {"protocols", {"6.0"}}, {"platforms", Json::array()}});
    CHECK(versions[1] == Json{{"version", "2.0.0-alpha"},
                              {"protocols", Json::array()},
                              {"platforms", Json::array()}});
    CHECK(versions[2].at("protocols") == Json::array({"4.0", "5.1"}));
    CHECK(versions[2].at("platforms") == Json::array({"linux_amd64", "darwin_arm64"}));
    CHECK(list.body.at("warnings") ==
          Json::array({"This provider is deprecated.", "Use acme/other."}));
    CHECK(list.body.at("invalid") == Json::array({"nightly"}));
    CHECK_FALSE(list.body.contains("id"));
}

TEST_CASE("newest release: the version Terraform installs when nothing pins another",
          "[daemon][registry]") {
    const VersionList list = parse_provider_versions(R"({"versions": [
        {"version": "1.0.0", "platforms": [{"os": "linux", "arch": "amd64"}]},
        {"version": "3.0.0-beta.1", "platforms": [{"os": "linux", "arch": "amd64"}]},
        {"version": "2.1.0", "platforms": [{"os": "darwin", "arch": "arm64"},
                                           {"os": "linux", "arch": "amd64"}]},
        {"version": "2.0.0", "platforms": [{"os": "linux", "arch": "arm64"}]}
    ]})");
    CHECK(newest_release(list.body, "linux_amd64") == std::optional<std::string>("2.1.0"));
    // The newest release is not built for linux_arm64: Terraform would fail
    // on it rather than fall back, so there is nothing to guess.
    CHECK(newest_release(list.body, "linux_arm64") == std::nullopt);
    const VersionList only_pre = parse_provider_versions(
        R"({"versions": [{"version": "1.0.0-rc1", "platforms": [{"os": "linux", "arch": "amd64"}]}]})");
    CHECK(newest_release(only_pre.body, "linux_amd64") == std::nullopt);
    CHECK(newest_release(parse_provider_versions(R"({"versions": []})").body, "linux_amd64") ==
          std::nullopt);
    CHECK_THROWS(newest_release(Json{{"versions", 1}}, "linux_amd64"));
}

TEST_CASE("provider versions: no warnings, no warnings member", "[daemon][registry]") {
    const VersionList list =
        parse_provider_versions(R"({"versions":[{"version":"1.0.0"}],"warnings":null})");
    CHECK(version_strings(list) == std::vector<std::string>{"1.0.0"});
    CHECK_FALSE(list.body.contains("warnings"));
    CHECK_FALSE(list.body.contains("invalid"));
}

TEST_CASE("provider versions: wrong types are errors naming the JSON path", "[daemon][registry]") {
    CHECK_THROWS_WITH(parse_provider_versions("{}"), Catch::Contains("no \"versions\""));
    CHECK_THROWS_WITH(parse_provider_versions(R"({"versions":{}})"),
                      Catch::Contains("\"versions\" is a JSON object, not an array"));
    CHECK_THROWS_WITH(parse_provider_versions(R"({"versions":[1]})"),
                      Catch::Contains("versions[0] is not an object"));
    CHECK_THROWS_WITH(parse_provider_versions(R"({"versions":[{"version":1}]})"),
                      Catch::Contains("versions[0].version is a JSON number, not a string"));
    CHECK_THROWS_WITH(
        parse_provider_versions(R"({"versions":[{"version":"1.0.0","protocols":"5.0"}]})"),
        Catch::Contains("versions[0].protocols is a JSON string, not an array"));
    CHECK_THROWS_WITH(
        parse_provider_versions(R"({"versions":[{"version":"1.0.0","protocols":[5]}]})"),
        Catch::Contains("versions[0].protocols[0] is not a string"));
    CHECK_THROWS_WITH(
        parse_provider_versions(R"({"versions":[{"version":"1.0.0","platforms":{}}]})"),
        Catch::Contains("versions[0].platforms is a JSON object, not an array"));
    CHECK_THROWS_WITH(parse_provider_versions(
                          R"({"versions":[{"version":"1.0.0","platforms":["linux_amd64"]}]})"),
                      Catch::Contains("versions[0].platforms[0] is not an object"));
    CHECK_THROWS_WITH(parse_provider_versions(
                          R"({"versions":[{"version":"1.0.0","platforms":[{"os":"linux"}]}]})"),
                      Catch::Contains("no versions[0].platforms[0].arch"));
    CHECK_THROWS_WITH(parse_provider_versions(R"({"versions":[],"warnings":"careful"})"),
                      Catch::Contains("\"warnings\" is a JSON string, not an array"));
    CHECK_THROWS_WITH(parse_provider_versions(R"({"versions":[],"warnings":[1]})"),
                      Catch::Contains("warnings[0] is not a string"));
}

// ---- mirror index.json
// ---------------------------------------------------------------------------------------------

TEST_CASE("mirror index: version keys, newest first, invalid keys apart", "[daemon][registry]") {
    const VersionList list = parse_mirror_index(
        R"({"versions":{"2.0.0":{},"2.0.1":{"x":1},"10.0.0":{},"v1.0.0":{},"two":{}}})");
    CHECK(version_strings(list) == std::vector<std::string>{"10.0.0", "2.0.1", "2.0.0", "1.0.0"});
    CHECK(body_versions(list.body.at("versions")) ==
          std::vector<std::string>{"10.0.0", "2.0.1", "2.0.0", "1.0.0"});
    CHECK(list.body.at("invalid") == Json::array({"two"}));
    CHECK(parse_mirror_index(R"({"versions":{}})").versions.empty());
}

TEST_CASE("mirror index: an object of objects is required", "[daemon][registry]") {
    CHECK_THROWS_WITH(parse_mirror_index("[]"), Catch::Contains("not an object"));
    CHECK_THROWS_WITH(parse_mirror_index("{}"), Catch::Contains("no \"versions\""));
    CHECK_THROWS_WITH(parse_mirror_index(R"({"versions":["2.0.0"]})"),
                      Catch::Contains("\"versions\" is a JSON array, not an object"));
    CHECK_THROWS_WITH(parse_mirror_index(R"({"versions":{"2.0.0":true}})"),
                      Catch::Contains("versions[\"2.0.0\"] is a JSON boolean, not an object"));
}

// ---- providers.v1 package
// ------------------------------------------------------------------------------------------

TEST_CASE("provider package: URLs resolved against the document's URL, zh: hash",
          "[daemon][registry]") {
    const Json p = parse_provider_package(package_body(), kPackageUrl);
    CHECK(p.at("os") == "linux");
    CHECK(p.at("arch") == "amd64");
    CHECK(p.at("platform") == "linux_amd64");
    CHECK(p.at("filename") == "terraform-provider-thing_1.0.0_linux_amd64.zip");
    CHECK(p.at("download_url") ==
          "https://r.example/files/terraform-provider-thing_1.0.0_linux_amd64.zip");
    CHECK(p.at("shasums_url") == "https://r.example/v1/providers/acme/thing/SHA256SUMS");
    CHECK(p.at("shasums_signature_url") == "https://sig.example/SHA256SUMS.sig");
    CHECK(p.at("shasum") == kShasum);
    CHECK(p.at("hashes") == Json::array({"zh:" + kShasum}));
    CHECK(p.at("protocols") == Json::array({"5.0"}));
    CHECK(p.at("signing_keys") == Json{{"gpg_public_keys", Json::array()}});
}

TEST_CASE("provider package: a download_url relative to the path", "[daemon][registry]") {
    const Json p = parse_provider_package(package_body("download_url", R"("./pkg.zip")"),
                                          "https://cdn.example:8443/x/y/package.json");
    CHECK(p.at("download_url") == "https://cdn.example:8443/x/y/pkg.zip");
}

TEST_CASE("provider package: optional fields may be absent", "[daemon][registry]") {
    Json doc = Json::parse(package_body());
    for (const char* name : {"shasums_url", "shasums_signature_url", "protocols", "signing_keys"})
        doc.erase(name);
    const Json p = parse_provider_package(doc.dump(), kPackageUrl);
    CHECK_FALSE(p.contains("shasums_url"));
    CHECK_FALSE(p.contains("shasums_signature_url"));
    CHECK_FALSE(p.contains("signing_keys"));
    CHECK(p.at("protocols") == Json::array());
}

TEST_CASE("provider package: the zh: hash is lowercase hex, as Terraform records it",
          "[daemon][registry]") {
    // Terraform decodes the hex shasum and formats zh: hashes with %x; a
    // registry that answers in uppercase must not produce a hash that never
    // matches the lock file's.
    std::string upper = kShasum;
    for (char& c : upper) c = static_cast<char>(c >= 'a' && c <= 'f' ? c - 'a' + 'A' : c);
    const Json p = parse_provider_package(package_body("shasum", "\"" + upper + "\""), kPackageUrl);
    CHECK(p.at("hashes") == Json::array({"zh:" + kShasum}));
}

TEST_CASE("provider package: a bad shasum or a missing field is an error", "[daemon][registry]") {
    CHECK_THROWS_WITH(parse_provider_package(
                          package_body("shasum", "\"" + kShasum.substr(1) + "\""), kPackageUrl),
                      Catch::Contains("is not a SHA-256 in hex"));
    CHECK_THROWS_WITH(parse_provider_package(
                          package_body("shasum", "\"" + kShasum.substr(1) + "g\""), kPackageUrl),
                      Catch::Contains("is not a SHA-256 in hex"));
    CHECK_THROWS_WITH(
        parse_provider_package(package_body("shasum", "\"" + kShasum + "00\""), kPackageUrl),
        Catch::Contains("is not a SHA-256 in hex"));
    CHECK_THROWS_WITH(parse_provider_package(package_body("shasum", "42"), kPackageUrl),
                      Catch::Contains("\"shasum\" is a JSON number, not a string"));
    for (const char* name : {"os", "arch", "filename", "download_url", "shasum"}) {
        INFO(name);
        CHECK_THROWS_WITH(parse_provider_package(package_body(name), kPackageUrl),
                          Catch::Contains(std::string("no \"") + name + "\""));
    }
    CHECK_THROWS_WITH(parse_provider_package(package_body("protocols", R"("5.0")"), kPackageUrl),
                      Catch::Contains("\"protocols\" is a JSON string, not an array"));
    CHECK_THROWS_WITH(
        parse_provider_package(package_body("download_url", R"("ftp://f.example/p.zip")"),
                               kPackageUrl),
        Catch::Contains("download_url \"ftp://f.example/p.zip\" is not an http(s) URL"));
    CHECK_THROWS_WITH(parse_provider_package("[]", kPackageUrl), Catch::Contains("not an object"));
}

// ---- mirror VERSION.json
// -------------------------------------------------------------------------------------------

TEST_CASE("mirror version: archive URLs resolved against the document's URL",
          "[daemon][registry]") {
    const Json v = parse_mirror_version(R"({"archives":{
        "linux_amd64": {"url": "terraform-provider-thing_1.0.0_linux_amd64.zip", "hashes": ["h1:abc="]},
        "darwin_arm64": {"url": "/dl/darwin.zip"},
        "windows_386": {"url": "https://cdn.example/w.zip", "hashes": []}}})",
                                        kMirrorVersionUrl);
    const Json& archives = v.at("archives");
    REQUIRE(archives.size() == 3);
    CHECK(archives.at("linux_amd64") == Json{{"url",
                                              "https://m.example/p/r.example/acme/thing/"
                                              "terraform-provider-thing_1.0.0_linux_amd64.zip"},
                                             {"hashes", {"h1:abc="}}});
    CHECK(archives.at("darwin_arm64") ==
          Json{{"url", "https://m.example/dl/darwin.zip"}, {"hashes", Json::array()}});
    CHECK(archives.at("windows_386").at("url") == "https://cdn.example/w.zip");
    CHECK_FALSE(v.contains("invalid"));
}

TEST_CASE("mirror version: keys that are not OS_ARCH are listed as invalid", "[daemon][registry]") {
    const Json v = parse_mirror_version(
        R"({"archives":{"linux_amd64":{"url":"a.zip"},"linux":{"url":"b.zip"},"Linux_AMD64":{"url":"c.zip"},)"
        R"("linux_amd64_v2":"not even an object"}})",
        kMirrorVersionUrl);
    CHECK(v.at("archives").size() == 1);
    CHECK(v.at("archives").contains("linux_amd64"));
    const Json& invalid = v.at("invalid");
    CHECK(invalid.size() == 3);
    CHECK(invalid.contains("linux"));
    CHECK(invalid.contains("Linux_AMD64"));
    CHECK(invalid.contains("linux_amd64_v2"));
}

TEST_CASE("mirror version: malformed documents are errors naming the JSON path",
          "[daemon][registry]") {
    CHECK_THROWS_WITH(parse_mirror_version("{}", kMirrorVersionUrl),
                      Catch::Contains("no \"archives\""));
    CHECK_THROWS_WITH(parse_mirror_version(R"({"archives":[]})", kMirrorVersionUrl),
                      Catch::Contains("\"archives\" is a JSON array, not an object"));
    CHECK_THROWS_WITH(
        parse_mirror_version(R"({"archives":{"linux_amd64":"a.zip"}})", kMirrorVersionUrl),
        Catch::Contains("archives[\"linux_amd64\"] is a JSON string, not an object"));
    CHECK_THROWS_WITH(parse_mirror_version(R"({"archives":{"linux_amd64":{}}})", kMirrorVersionUrl),
                      Catch::Contains("no archives[\"linux_amd64\"].url"));
    CHECK_THROWS_WITH(
        parse_mirror_version(R"({"archives":{"linux_amd64":{"url":"a.zip","hashes":"h1:x"}}})",
                             kMirrorVersionUrl),
        Catch::Contains("archives[\"linux_amd64\"].hashes is a JSON string, not an array"));
    CHECK_THROWS_WITH(
        parse_mirror_version(R"({"archives":{"linux_amd64":{"url":"a.zip","hashes":[1]}}})",
                             kMirrorVersionUrl),
        Catch::Contains("archives[\"linux_amd64\"].hashes[0] is not a string"));
}

// ---- module download locations
// -------------------------------------------------------------------------------------

TEST_CASE("module location: /, ./ and ../ are resolved against the download endpoint",
          "[daemon][registry]") {
    CHECK(resolve_module_location("/x", kEndpoint) == "https://r.example/x");
    CHECK(resolve_module_location("./x", kEndpoint) ==
          "https://r.example/v1/modules/a/b/c/1.0.0/x");
    CHECK(resolve_module_location("../x", kEndpoint) == "https://r.example/v1/modules/a/b/c/x");
    CHECK(resolve_module_location("./archive.tar.gz?archive=tar.gz", kEndpoint) ==
          "https://r.example/v1/modules/a/b/c/1.0.0/archive.tar.gz?archive=tar.gz");
    CHECK(resolve_module_location("/x", "https://r.example:8443/v1/modules/a/b/c/1.0.0/download") ==
          "https://r.example:8443/x");
}

TEST_CASE("module location: go-getter addresses are taken as given", "[daemon][registry]") {
    for (const std::string location :
         {"git::https://example.com/vpc.git?ref=v1.2.0",
          "https://api.github.com/repos/a/b/tarball/v0.0.1//*?archive=tar.gz",
          "s3::https://s3-eu-west-1.amazonaws.com/bucket/vpc.zip", "github.com/hashicorp/example",
          "git::ssh://git@example.com/storage.git"}) {
        CHECK(resolve_module_location(location, kEndpoint) == location);
    }
}

// ---- version constraints
// -------------------------------------------------------------------------------------------

TEST_CASE("allowed versions: the entries the constraints allow, newest first",
          "[daemon][registry]") {
    const VersionList list = parse_module_versions(module_versions_body(
        R"({"version":"1.0.0"},{"version":"1.1.0"},{"version":"2.0.0"},{"version":"1.2.0-beta"},{"version":"1.2.0"})"));
    CHECK(body_versions(allowed_versions(list.body, list.versions,
                                         proto::VersionConstraints::parse("~> 1.0"))) ==
          std::vector<std::string>{"1.2.0", "1.1.0", "1.0.0"});
    CHECK(body_versions(allowed_versions(list.body, list.versions,
                                         proto::VersionConstraints::parse(">= 1.1, < 2.0.0"))) ==
          std::vector<std::string>{"1.2.0", "1.1.0"});
    CHECK(body_versions(allowed_versions(list.body, list.versions,
                                         proto::VersionConstraints::parse("1.2.0-beta"))) ==
          std::vector<std::string>{"1.2.0-beta"});
    CHECK(allowed_versions(list.body, list.versions, proto::VersionConstraints::parse("> 2.0.0")) ==
          Json::array());

    const VersionList providers = parse_provider_versions(
        R"({"versions":[{"version":"1.0.0","protocols":["5.0"]},{"version":"1.5.0","protocols":["6.0"]}]})");
    const Json allowed = allowed_versions(providers.body, providers.versions,
                                          proto::VersionConstraints::parse("!= 1.0.0"));
    REQUIRE(allowed.size() == 1);
    CHECK(allowed[0].at("version") == "1.5.0");
    CHECK(allowed[0].at("protocols") == Json::array({"6.0"}));
}

// ---- the mirror URL
// ------------------------------------------------------------------------------------------------

TEST_CASE("mirror URL: normalized, with a trailing slash; its host gets the port unless 443",
          "[daemon][registry]") {
    daemon::registry::Mirror m = make_mirror("https://Mirror.Example.com:8443/p");
    CHECK(m.base == "https://mirror.example.com:8443/p/");
    CHECK(m.host == "mirror.example.com:8443");

    m = make_mirror("https://m.example/providers/");
    CHECK(m.base == "https://m.example/providers/");
    CHECK(m.host == "m.example");

    m = make_mirror("https://m.example");
    CHECK(m.base == "https://m.example/");
    CHECK(m.host == "m.example");

    m = make_mirror("https://m.example:443/p/");
    CHECK(m.host == "m.example");
}

// Found by tests/fuzz/fuzz_mirror (corpus: regression-idna-numeric-host): a
// host that IDNA maps to a short-form IPv4 address named another host than
// the one libcurl connects to, and was no fixed point of make_mirror.
TEST_CASE("mirror URL: a host IDNA makes numeric is named as libcurl reads it",
          "[daemon][registry]") {
    for (const std::string url : {"https://\xef\xbc\x91\xef\xbc\x92\xef\xbc\x97.\xef\xbc\x91/p",
                                  "https:/\xcb\x9a"
                                  "1"}) {
        const daemon::registry::Mirror m = make_mirror(url);
        const daemon::registry::Mirror again = make_mirror(m.base);
        CHECK(again.base == m.base);
        CHECK(again.host == m.host);
    }
    CHECK(make_mirror("https://\xef\xbc\x91\xef\xbc\x92\xef\xbc\x97.\xef\xbc\x91/p").base ==
          "https://127.0.0.1/p/");
    CHECK(make_mirror("https:/\xcb\x9a"
                      "1")
              .host == "0.0.0.1");
}

TEST_CASE("mirror URL: https only, no credentials, no query", "[daemon][registry]") {
    CHECK(mirror_error("http://m.example/p/") == proto::ErrorCode::bad_request);
    CHECK_THROWS_WITH(make_mirror("http://m.example/p/"), Catch::Contains("must use https"));
    CHECK_THROWS_WITH(make_mirror("https://user:pw@m.example/p/"),
                      Catch::Contains("user name or password"));
    CHECK_THROWS_WITH(make_mirror("https://user@m.example/p/"),
                      Catch::Contains("user name or password"));
    CHECK_THROWS_WITH(make_mirror("https://m.example/p/?token=1"),
                      Catch::Contains("query or fragment"));
    CHECK_THROWS_WITH(make_mirror("https://m.example/p/#top"),
                      Catch::Contains("query or fragment"));
    CHECK(mirror_error("m.example/p/") == proto::ErrorCode::bad_request);
    CHECK(mirror_error("") == proto::ErrorCode::bad_request);
}

}  // namespace test_registry_documents
