// registry-cache.json's one reader and writer, as hostkeeperd and the
// command line both use it; the tfrc header and the listener's address.
#include <catch2/catch.hpp>
#include <string>

#include "proto/json.hpp"
#include "proto/registry_cache_file.hpp"

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
