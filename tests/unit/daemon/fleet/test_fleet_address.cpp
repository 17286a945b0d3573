// The fleet setting and the names of the fleet tier's repositories and tags.
#include <catch2/catch.hpp>
#include <string>

#include "daemon/fleet/fleet_address.hpp"

namespace test_fleet_address {

using namespace hostkeeper::daemon::fleet;
using Catch::Matchers::Contains;

TEST_CASE("a fleet setting names an OCI registry and a repository prefix", "[fleet]") {
    const FleetAddress fleet = parse_fleet_address("oci://Registry.Example.COM/team/tf-cache/");
    CHECK(fleet.host == "registry.example.com");
    CHECK(fleet.prefix == "team/tf-cache");
    CHECK(fleet.origin() == "https://registry.example.com");
    CHECK(fleet.text() == "oci://registry.example.com/team/tf-cache");

    const FleetAddress ported = parse_fleet_address("oci://127.0.0.1:5000/cache");
    CHECK(ported.host == "127.0.0.1:5000");
    CHECK(ported.origin() == "https://127.0.0.1:5000");
    CHECK(parse_fleet_address("oci://r.example:443/c").host == "r.example");
}

TEST_CASE("a fleet setting that cannot be used says why", "[fleet]") {
    CHECK_THROWS_WITH(parse_fleet_address("https://r.example/c"), Contains("oci://HOST/PREFIX"));
    CHECK_THROWS_WITH(parse_fleet_address("oci://r.example"), Contains("no repository prefix"));
    CHECK_THROWS_WITH(parse_fleet_address("oci://r.example/"), Contains("no repository prefix"));
    CHECK_THROWS_WITH(parse_fleet_address("oci://user:pw@r.example/c"), Contains("without a user"));
    CHECK_THROWS_WITH(parse_fleet_address("oci://r.example/Upper"), Contains("'Upper'"));
    CHECK_THROWS_WITH(parse_fleet_address("oci://r.example/a//b"), Contains("''"));
    CHECK_THROWS_WITH(parse_fleet_address("oci://r.example/a_-b"), Contains("cannot be part"));
    CHECK_THROWS_AS(parse_fleet_address("oci://bad host/c"), FleetAddressError);
    CHECK_THROWS_AS(parse_fleet_address("oci:///c"), FleetAddressError);
    CHECK_THROWS_WITH(parse_fleet_address("oci://r.example/" + std::string(200, 'a')),
                      Contains("over"));
}

TEST_CASE("repository components follow OCI's grammar", "[fleet]") {
    for (const char* good : {"a", "a1", "a.b", "a_b", "a__b", "a-b", "a---b", "xn--bcher-kva"})
        CHECK(repository_component(good));
    for (const char* bad : {"", "A", "-a", "a-", ".a", "a.", "a..b", "a___b", "a_.b", "a/b", "a b"})
        CHECK_FALSE(repository_component(bad));
}

TEST_CASE("each registry host's providers and modules have repositories of their own", "[fleet]") {
    const FleetAddress fleet = parse_fleet_address("oci://oci.example/fleet");
    CHECK(provider_repository(fleet, "registry.terraform.io", "hashicorp", "aws") ==
          "fleet/providers/registry.terraform.io/hashicorp/aws");
    CHECK(provider_repository(fleet, "localhost:8443", "acme", "thing") ==
          "fleet/providers/localhost__8443/acme/thing");
    CHECK(module_repository(fleet, "app.terraform.io", "Acme", "vpc", "aws") ==
          "fleet/modules/app.terraform.io/acme/vpc/aws");
    // A name part that is no component once lowercased is written in hex.
    CHECK(module_repository(fleet, "r.example", "a-_b", "n", "s") ==
          "fleet/modules/r.example/x612d5f62/n/s");
    CHECK_THROWS_WITH(provider_repository(fleet, "Not Normalized", "a", "b"),
                      Contains("not a normalized registry hostname"));
    CHECK_THROWS_WITH(provider_repository(fleet, "r.example", std::string(250, 'a'), "b"),
                      Contains("over 255"));
}

TEST_CASE("versions are tags as OpenTofu reads them", "[fleet]") {
    CHECK(version_tag("1.2.0") == "1.2.0");
    CHECK(version_tag("1.2.0-beta.1+ent.2") == "1.2.0-beta.1_ent.2");
    CHECK(platform_tag("1.2.0", "linux", "amd64") == "1.2.0_linux_amd64");
    CHECK_THROWS_AS(version_tag(""), FleetAddressError);
    CHECK_THROWS_AS(version_tag("1.0/2"), FleetAddressError);
    CHECK_THROWS_AS(version_tag(".1"), FleetAddressError);
    CHECK_THROWS_AS(version_tag(std::string(129, '1')), FleetAddressError);
    CHECK_THROWS_AS(platform_tag("1.0.0", "Linux", "amd64"), FleetAddressError);
    CHECK_THROWS_AS(platform_tag("1.0.0", "linux", ""), FleetAddressError);
}

}  // namespace test_fleet_address
