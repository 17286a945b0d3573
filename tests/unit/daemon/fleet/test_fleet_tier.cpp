// The fleet tier's choices against a scripted registry: what it reads, what
// it refuses, and when it writes nothing. The real docker-registry is in
// tests/e2e/registry_fleet.sh.
#include <fcntl.h>
#include <unistd.h>

#include <catch2/catch.hpp>
#include <map>
#include <optional>
#include <string>
#include <tuple>
#include <utility>

#include "daemon/archives/package_hash.hpp"
#include "daemon/fleet/fleet_tier.hpp"
#include "daemon/fleet/oci_manifest.hpp"
#include "tests/unit/fake_http_client.hpp"
#include "tests/unit/run_awaitable.hpp"

namespace test_fleet_tier {

using namespace hostkeeper::daemon::fleet;
using hostkeeper::daemon::archives::OwnedFd;
using hostkeeper::daemon::archives::sha256_hex;
using hostkeeper::daemon::archives::TierItem;
using hostkeeper::daemon::http::HttpRequest;
using hostkeeper::daemon::http::HttpResponse;
using hostkeeper::test::FakeHttpClient;
using hostkeeper::test::run_to_completion;

constexpr const char* kBase = "https://oci.example/v2/ci/";

// A registry holding documents and blobs by URL; anything else is a 404.
struct Registry {
    std::map<std::string, std::string> documents;

    HttpResponse operator()(const HttpRequest& request) const {
        HttpResponse r;
        const std::string url = request.url.substr(0, request.url.find('?'));
        const auto it = documents.find(url);
        r.status = it == documents.end() ? 404 : 200;
        if (it != documents.end() && request.method == "GET") r.body = it->second;
        return r;
    }
};

TierItem module_item() {
    TierItem item;
    item.kind = TierItem::Kind::module;
    item.host = "registry.example";
    item.namespace_ = "acme";
    item.name = "vpc";
    item.system = "aws";
    item.version = "1.0.0";
    item.location = "https://downloads.example/vpc-1.0.0.zip";
    item.filename = "vpc-1.0.0.zip";
    return item;
}

struct Fixture {
    boost::asio::io_context io;
    FakeHttpClient http{io.get_executor()};
    Registry registry;

    Fixture() {
        http.respond = [this](const HttpRequest& request) { return registry(request); };
    }

    FleetTier tier(bool push = true, bool modules = true) {
        FleetOptions options{parse_fleet_address("oci://oci.example/ci"), push, modules};
        return FleetTier(io.get_executor(), http, options, nullptr);
    }

    // A module archive stored for `location`.
    void store_module(const std::string& bytes, const std::string& location) {
        const std::string digest = "sha256:" + sha256_hex(bytes);
        const std::string repository =
            std::string(kBase) + "modules/registry.example/acme/vpc/aws/";
        registry.documents[repository + "manifests/1.0.0"] =
            write_manifest(module_manifest(digest, bytes.size(), "archive/zip", location));
        registry.documents[repository + "blobs/" + digest] = bytes;
    }
};

int scratch_file() {
    char path[] = "/tmp/hk-fleet-tier-XXXXXX";
    const int fd = ::mkstemp(path);
    ::unlink(path);
    return fd;
}

TEST_CASE("a module archive is taken only when stored for the same download location", "[fleet]") {
    Fixture f;
    FleetTier tier = f.tier();
    const OwnedFd file(scratch_file());
    REQUIRE(file.get() >= 0);
    f.store_module("PK module", module_item().location);
    CHECK(run_to_completion(f.io, tier.fetch(module_item(), "", file.get())) == 9);
    CHECK(tier.stats().hits == 1);

    f.store_module("PK other", "https://elsewhere.example/vpc.zip");
    CHECK_FALSE(run_to_completion(f.io, tier.fetch(module_item(), "", file.get())));
    CHECK(tier.stats().misses == 1);
    CHECK(tier.stats().problem.empty());  // a miss is no problem
}

TEST_CASE("fleet_modules = false and fleet_push = false keep the tier out of it", "[fleet]") {
    Fixture f;
    f.store_module("PK module", module_item().location);
    FleetTier providers_only = f.tier(true, false);
    const OwnedFd file(scratch_file());
    CHECK_FALSE(run_to_completion(f.io, providers_only.fetch(module_item(), "", file.get())));
    providers_only.offer(module_item(), file.reopen(), 9, "");
    FleetTier read_only = f.tier(false, true);
    read_only.offer(module_item(), file.reopen(), 9, "");
    f.io.restart();
    f.io.run();
    CHECK(f.http.requests.empty());
    CHECK(read_only.stats().pushes == 0);
}

// The fixture's registry, taking uploads: PUT bodies kept in `put` by URL.
void accept_writes(Fixture& f, std::map<std::string, std::string>& put) {
    f.http.respond = [&f, &put](const HttpRequest& request) {
        HttpResponse r;
        if (request.method == "POST") {
            r.status = 202;
            r.location = request.url + "upload-1";
            return r;
        }
        if (request.method == "PUT") {
            put[request.url.substr(0, request.url.find('?'))] = request.body;
            r.status = 201;
            return r;
        }
        return f.registry(request);
    };
}

TEST_CASE("an offered archive is written: blob, config, manifest", "[fleet]") {
    // A zip is an archive/zip layer by its bytes, whatever its location
    // says; anything else is plain bytes.
    const auto [bytes, location, type] = GENERATE(table<std::string, std::string, std::string>(
        {{std::string("PK\3\4 module", 10), "https://downloads.example/vpc?archive=zip",
          "archive/zip"},
         {"\x1f\x8b module", "https://downloads.example/vpc-1.0.0.tar.gz",
          "application/octet-stream"}}));
    Fixture f;
    std::map<std::string, std::string> put;
    accept_writes(f, put);
    FleetTier tier = f.tier();
    const OwnedFd file(scratch_file());
    REQUIRE(::write(file.get(), bytes.data(), bytes.size()) == static_cast<ssize_t>(bytes.size()));
    TierItem item = module_item();
    item.location = location;
    tier.offer(item, file.reopen(), bytes.size(), sha256_hex(bytes));
    CHECK(tier.status()["in_flight"] == 1);
    f.io.restart();
    f.io.run();  // until the write is done
    const FleetStats stats = tier.stats();
    CHECK(stats.pushes == 1);
    CHECK(stats.bytes_out == bytes.size());
    CHECK(stats.failures == 0);
    const std::string repository = std::string(kBase) + "modules/registry.example/acme/vpc/aws/";
    REQUIRE(put.count(repository + "manifests/1.0.0") == 1);
    const Manifest manifest = read_manifest(put[repository + "manifests/1.0.0"]);
    CHECK(manifest.artifact_type == kModuleArtifact);
    REQUIRE(manifest.layers.size() == 1);
    CHECK(manifest.layers[0].media_type == type);
    CHECK(manifest.layers[0].digest == "sha256:" + sha256_hex(bytes));
    CHECK(manifest.layers[0].annotations.at(std::string(kLocationAnnotation)) == location);
    // Read back as it was written.
    f.registry.documents = put;
    f.registry.documents[repository + "blobs/sha256:" + sha256_hex(bytes)] = bytes;
    const OwnedFd back(scratch_file());
    CHECK(run_to_completion(f.io, tier.fetch(item, "", back.get())) == bytes.size());
}

TEST_CASE("a provider's platform manifest already there gets its entry in the version's index",
          "[fleet]") {
    Fixture f;
    std::map<std::string, std::string> put;
    accept_writes(f, put);
    const std::string zip("PK\3\4 provider", 12);
    TierItem item = module_item();  // its host, namespace and version
    item.kind = TierItem::Kind::provider;
    item.name = "thing";
    item.system.clear();
    item.location.clear();
    std::tie(item.os, item.arch) = std::pair("linux", "amd64");
    item.filename = "terraform-provider-thing_1.0.0_linux_amd64.zip";
    const std::string repository = std::string(kBase) + "providers/registry.example/acme/thing/";
    const std::string platform_manifest =
        write_manifest(provider_manifest("sha256:" + sha256_hex(zip), zip.size(), item.filename));
    // Another writer's platform manifest, its index entry lost (two
    // writers at once, or an index write that failed).
    f.registry.documents[repository + "manifests/1.0.0_linux_amd64"] = platform_manifest;
    FleetTier tier = f.tier();
    const OwnedFd file(scratch_file());
    REQUIRE(::write(file.get(), zip.data(), zip.size()) == static_cast<ssize_t>(zip.size()));
    tier.offer(item, file.reopen(), zip.size(), sha256_hex(zip));
    f.io.restart();
    f.io.run();
    CHECK(tier.stats().present == 1);
    CHECK(tier.stats().pushes == 0);
    REQUIRE(put.size() == 1);  // the index alone: no blob, no manifest
    const Index index = read_index(put.at(repository + "manifests/1.0.0"));
    const std::optional<Descriptor> entry = platform_entry(index, Platform{"linux", "amd64"});
    REQUIRE(entry);
    CHECK(entry->digest == "sha256:" + sha256_hex(platform_manifest));

    // Listed already: nothing is written.
    f.registry.documents[repository + "manifests/1.0.0"] = put.at(repository + "manifests/1.0.0");
    put.clear();
    tier.offer(item, file.reopen(), zip.size(), sha256_hex(zip));
    f.io.restart();
    f.io.run();
    CHECK(tier.stats().present == 2);
    CHECK(put.empty());
}

TEST_CASE("a tier that cannot be reached is a miss with a problem, said once", "[fleet]") {
    Fixture f;
    f.http.respond = nullptr;  // no route: no answer
    FleetTier tier = f.tier();
    const OwnedFd file(scratch_file());
    CHECK_FALSE(run_to_completion(f.io, tier.fetch(module_item(), "", file.get())));
    CHECK(tier.stats().failures == 1);
    CHECK_THAT(tier.stats().problem, Catch::Matchers::Contains("reachable"));
}

}  // namespace test_fleet_tier
