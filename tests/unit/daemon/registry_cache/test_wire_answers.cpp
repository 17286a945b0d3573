// The listener's answers in the shapes Terraform reads, made from the
// daemon's normalized documents (the real parsers make them here from
// registry bodies), and which module download locations the cache fetches
// itself (http(s) archives) and which it passes through as given.
#include <catch2/catch.hpp>
#include <optional>
#include <set>
#include <string>

#include "daemon/registry/registry_documents.hpp"
#include "daemon/registry_cache/wire_answers.hpp"
#include "proto/json.hpp"

namespace test_wire_answers {

using namespace hostkeeper::daemon::registry_cache;
using hostkeeper::daemon::registry::parse_mirror_index;
using hostkeeper::daemon::registry::parse_module_versions;
using hostkeeper::daemon::registry::parse_provider_package;
using hostkeeper::daemon::registry::parse_provider_versions;
using hostkeeper::proto::Json;
using hostkeeper::proto::parse_json;

namespace {
const std::string kShasum = "5f0c6d4f2b7d0b2a8f3b9b6c1c9e8d7a6b5c4d3e2f1a0b9c8d7e6f5a4b3c2d1e";
}  // namespace

TEST_CASE("wire answers: module versions as Terraform reads them", "[registry_cache]") {
    const Json normalized =
        parse_module_versions(
            R"({"modules":[{"versions":[{"version":"1.0.0"},{"version":"2.1.0"},{"version":"x"}]}]})")
            .body;
    const Json wire = module_versions_wire(normalized);
    REQUIRE(wire.at("modules").size() == 1);
    const Json& versions = wire.at("modules").at(0).at("versions");
    REQUIRE(versions.size() == 2);
    // Each entry is {"version": "..."} and nothing else.
    for (const Json& v : versions) CHECK(v.size() == 1);
    std::set<std::string> seen;
    for (const Json& v : versions) seen.insert(v.at("version").get<std::string>());
    CHECK(seen == std::set<std::string>{"1.0.0", "2.1.0"});
}

TEST_CASE("wire answers: provider versions with platforms as {os, arch} and warnings",
          "[registry_cache]") {
    const Json normalized = parse_provider_versions(R"({"versions":[
        {"version":"1.0.0","protocols":["5.0"],"platforms":[{"os":"linux","arch":"amd64"},{"os":"darwin","arch":"arm64"}]}],
        "warnings":["deprecated"]})")
                                .body;
    const Json wire = provider_versions_wire(normalized);
    REQUIRE(wire.at("versions").size() == 1);
    const Json& v = wire.at("versions").at(0);
    CHECK(v.at("version") == "1.0.0");
    CHECK(v.at("protocols") == Json::array({"5.0"}));
    CHECK(v.at("platforms") ==
          parse_json(R"([{"os":"linux","arch":"amd64"},{"os":"darwin","arch":"arm64"}])"));
    CHECK(wire.at("warnings") == Json::array({"deprecated"}));
}

TEST_CASE("wire answers: the provider package points at the listener, keeps keys and shasum",
          "[registry_cache]") {
    const Json normalized = parse_provider_package(R"({
        "protocols":["5.0","6.0"],"os":"linux","arch":"amd64",
        "filename":"terraform-provider-thing_1.1.0_linux_amd64.zip",
        "download_url":"https://cdn.example.com/thing.zip",
        "shasums_url":"https://cdn.example.com/SHA256SUMS",
        "shasums_signature_url":"https://cdn.example.com/SHA256SUMS.sig",
        "shasum":")" + kShasum + R"(",
        "signing_keys":{"gpg_public_keys":[{"key_id":"51852D87348FFC4C","ascii_armor":"KEY"}]}})",
                                                   "https://reg.example.com/v1/providers/a/b");
    const Json wire = provider_package_wire(normalized, "http://127.0.0.1:1/C/archives/x.zip",
                                            "http://127.0.0.1:1/C/v1/h/SHA256SUMS");
    CHECK(wire.at("download_url") == "http://127.0.0.1:1/C/archives/x.zip");
    CHECK(wire.at("shasums_url") == "http://127.0.0.1:1/C/v1/h/SHA256SUMS");
    CHECK(wire.at("shasums_signature_url") == "http://127.0.0.1:1/C/v1/h/SHA256SUMS.sig");
    CHECK(wire.at("shasum") == kShasum);
    CHECK(wire.at("filename") == "terraform-provider-thing_1.1.0_linux_amd64.zip");
    CHECK(wire.at("os") == "linux");
    CHECK(wire.at("arch") == "amd64");
    CHECK(wire.at("protocols") == Json::array({"5.0", "6.0"}));
    CHECK(wire.at("signing_keys").at("gpg_public_keys").at(0).at("key_id") == "51852D87348FFC4C");
    CHECK(wire.at("signing_keys").at("gpg_public_keys").at(0).at("ascii_armor") == "KEY");
    // No upstream URL is left in it.
    CHECK_THAT(wire.dump(), !Catch::Contains("cdn.example.com"));
}

TEST_CASE("wire answers: the mirror index", "[registry_cache]") {
    const Json wire =
        mirror_index_wire(parse_mirror_index(R"({"versions":{"1.0.0":{},"2.0.0":{}}})").body);
    REQUIRE(wire.size() == 1);
    REQUIRE(wire.at("versions").size() == 2);
    CHECK(wire.at("versions").at("1.0.0") == Json::object());
    CHECK(wire.at("versions").at("2.0.0") == Json::object());
}

TEST_CASE("wire answers: zh_sha256 finds a zh: hash, lowercased", "[registry_cache]") {
    CHECK(zh_sha256(Json::array({"h1:abc=", "zh:" + std::string(64, 'A')})) ==
          std::string(64, 'a'));
    CHECK_FALSE(zh_sha256(Json::array({"h1:abc=", "zh:" + std::string(63, 'a')})));
    CHECK_FALSE(zh_sha256(Json::array({"zh:" + std::string(63, 'a') + "g"})));
    CHECK_FALSE(zh_sha256(Json("zh:" + std::string(64, 'a'))));
}

TEST_CASE("wire answers: which module locations the cache fetches", "[registry_cache]") {
    const auto plain = cacheable_module_archive("https://h.example.com/x/net-1.0.0.tar.gz");
    REQUIRE(plain);
    CHECK(plain->url == "https://h.example.com/x/net-1.0.0.tar.gz");
    CHECK(plain->filename == "net-1.0.0.tar.gz");
    CHECK(plain->suffix.empty());

    const auto subdir = cacheable_module_archive("https://h.example.com/x/net.zip//modules/vpc");
    REQUIRE(subdir);
    CHECK(subdir->url == "https://h.example.com/x/net.zip");
    CHECK(subdir->filename == "net.zip");
    CHECK(subdir->suffix == "//modules/vpc");

    // go-getter picks the unpacker by ?archive= where the name says nothing.
    const auto by_param = cacheable_module_archive("http://h.example.com/get/net?archive=zip");
    REQUIRE(by_param);
    CHECK(by_param->url == "http://h.example.com/get/net?archive=zip");
    CHECK(by_param->filename == "net");
    CHECK(by_param->suffix == "?archive=zip");

    // A signed URL's query is fetched, never served.
    const auto signed_url = cacheable_module_archive(
        "https://bucket.example.com/m.tar.gz?X-Amz-Signature=abc&X-Amz-Expires=60");
    REQUIRE(signed_url);
    CHECK(signed_url->url ==
          "https://bucket.example.com/m.tar.gz?X-Amz-Signature=abc&X-Amz-Expires=60");
    CHECK(signed_url->filename == "m.tar.gz");
    CHECK(signed_url->suffix.empty());

    for (const char* passed : {
             "git::https://github.com/acme/net.git?ref=v1.0.0",
             "s3::https://s3.amazonaws.com/bucket/net.zip",
             "gcs::https://www.googleapis.com/storage/v1/bucket/net.zip",
             "github.com/acme/net",
             "./local/net.tar.gz",
             "https://h.example.com/x/net",  // no extension: go-getter probes it
             "https://h.example.com/x/",
             "https://h.example.com",
             "https://h.example.com/x/net.tar.gz#frag",
             "ftp://h.example.com/x/net.tar.gz",
             "https://h.example.com/x/.tar.gz",  // nothing before the extension
             "https://h.example.com/x/net%20a.zip",
             "https://h.example.com/x/net.zip//sub dir",
             "https://h.example.com/x/net.zip//sub\rdir",
             "https://h.example.com/x/net.zip//sub\ndir",
             "https://h.example.com/x/net.zip//sub\"dir",
             "https://h.example.com/x/net?archive=../zip",
             "https://h.example.com/x/net?archive=z p",
         }) {
        INFO(passed);
        CHECK_FALSE(cacheable_module_archive(passed).has_value());
    }
}

}  // namespace test_wire_answers
