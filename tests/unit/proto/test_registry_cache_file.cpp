// registry-cache.json's one reader and writer, as hostkeeperd and the
// command line both use it; the tfrc header and the listener's address.
#include <catch2/catch.hpp>
#include <string>
#include <vector>

#include "proto/json.hpp"
#include "proto/registry_cache_file.hpp"

namespace test_registry_cache_file {

namespace proto = hostkeeper::proto;
using proto::Json;

TEST_CASE("registry-cache.json: written, read back the same", "[proto][registry_cache]") {
    proto::RegistryCacheFile file;
    file.tfrc_files = {"/home/u/.terraform.d/hostkeeper.tfrc"};
    file.hosts = {"a.example"};
    const proto::RegistryCacheFile read =
        proto::parse_registry_cache_file(proto::registry_cache_file_text(file));
    CHECK(read.tfrc_files == file.tfrc_files);
    CHECK(read.hosts == file.hosts);
    CHECK_FALSE(read.old_capability);
}

TEST_CASE("registry-cache.json: the stricter rules hold for every reader",
          "[proto][registry_cache]") {
    const auto parse = [](const Json& doc) { return proto::parse_registry_cache_file(doc.dump()); };
    const Json good = {{"version", 1}, {"tfrc_files", Json::array()}, {"hosts", Json::array()}};
    Json doc = good;
    doc["extra"] = true;
    CHECK_THROWS_WITH(parse(doc), Catch::Contains("unknown key \"extra\""));
    doc = good;
    doc["version"] = "1";
    CHECK_THROWS_WITH(parse(doc), Catch::Contains("\"version\" must be 1"));
    doc = good;
    doc["tfrc_files"] = Json::array({"/home/u/dir/"});
    CHECK_THROWS_WITH(parse(doc), Catch::Contains("absolute file paths"));
    doc = good;
    doc["hosts"] = Json::array({"A.Example", "a.example"});
    CHECK(parse(doc).hosts == std::vector<std::string>{"a.example"});
    doc["capability"] = "old";
    CHECK(parse(doc).old_capability);
    CHECK_THROWS_AS(proto::parse_registry_cache_file("{"), proto::RegistryCacheFileError);
}

TEST_CASE("the tfrc header and the listener's address", "[proto][registry_cache]") {
    CHECK(proto::is_daemon_tfrc(std::string(proto::kTfrcHeader) + " (hostkeeper setup)\n"));
    CHECK_FALSE(proto::is_daemon_tfrc("# Written by hand\n"));
    CHECK(proto::listen_address(585) == "127.0.0.1:585");
    CHECK(proto::base_url(585) == "http://127.0.0.1:585/");
    CHECK(proto::loopback_port(proto::listen_address(585)) == 585);
}

TEST_CASE("listen addresses and the ports in a tfrc file", "[proto][registry_cache]") {
    CHECK(proto::loopback_port("127.0.0.1:8080") == 8080);
    CHECK(proto::loopback_port("127.0.0.1:65535") == 65535);
    CHECK_FALSE(proto::loopback_port("127.0.0.1:0"));
    CHECK_FALSE(proto::loopback_port("127.0.0.1:65536"));
    CHECK_FALSE(proto::loopback_port("0.0.0.0:8080"));
    CHECK_FALSE(proto::loopback_port("127.0.0.1:"));
    CHECK_FALSE(proto::loopback_port("127.0.0.1:80x"));
    const std::string tfrc =
        "# Written by hostkeeperd for the registry cache\n"
        "host \"a\" {\n  services = {\n"
        "    \"modules.v1\" = \"http://127.0.0.1:4242/v1/a/modules/\"\n"
        "    \"providers.v1\" = \"http://127.0.0.1:4242/v1/a/providers/\"\n"
        "    \"tfe.v2\" = \"https://a/api/v2/\"\n  }\n}\n"
        "host \"b\" {\n  services = {\n"
        // An older setup's URL, below a capability: the port counts the same.
        "    \"modules.v1\" = \"http://127.0.0.1:5151/CAP/v1/b/modules/\"\n  }\n}\n";
    CHECK(proto::tfrc_listener_ports(tfrc) == std::vector<int>{4242, 5151});
    CHECK(proto::tfrc_listener_ports("host \"x\" { services = {} }").empty());
}

}  // namespace test_registry_cache_file
