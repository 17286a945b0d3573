// OCI manifests and indexes in OpenTofu's provider and module layouts.
#include <catch2/catch.hpp>
#include <string>

#include "daemon/archives/package_hash.hpp"
#include "daemon/fleet/oci_manifest.hpp"

namespace test_oci_manifest {

using namespace hostkeeper::daemon::fleet;
using Catch::Matchers::Contains;
using hostkeeper::daemon::archives::sha256_hex;

const std::string kZip = "sha256:" + std::string(64, 'a');
const std::string kOther = "sha256:" + std::string(64, 'b');

TEST_CASE("a provider package's manifest is what OpenTofu's oci_mirror reads", "[fleet]") {
    const Manifest manifest =
        provider_manifest(kZip, 1234, "terraform-provider-thing_1.0.0_linux_amd64.zip");
    const std::string text = write_manifest(manifest);
    CHECK(text == R"({"schemaVersion":2,"mediaType":"application/vnd.oci.image.manifest.v1+json",)"
                  R"("artifactType":"application/vnd.opentofu.provider-target",)"
                  R"("config":{"mediaType":"application/vnd.oci.empty.v1+json","digest":"sha256:)"
                  R"(44136fa355b3678a1146ad16f7e8649e94fb4fc21fe77e8310c060f61caaff8a","size":2},)"
                  R"("layers":[{"mediaType":"archive/zip","digest":")" +
                      kZip +
                      R"(","size":1234,"annotations":{"org.opencontainers.image.title":)"
                      R"("terraform-provider-thing_1.0.0_linux_amd64.zip"}}]})");
    // The empty config's digest is the SHA-256 of its two bytes.
    CHECK(empty_config().digest == "sha256:" + sha256_hex(kEmptyConfigBlob));

    const Manifest read = read_manifest(text);
    CHECK(read.artifact_type == kProviderTargetArtifact);
    CHECK(read.config.media_type == kEmptyConfigType);
    const auto layer = single_layer(read, kZipLayerType);
    REQUIRE(layer);
    CHECK(layer->digest == kZip);
    CHECK(layer->size == 1234);
    CHECK(write_manifest(read) == text);
}

TEST_CASE("a provider version's index holds one manifest per platform", "[fleet]") {
    Descriptor linux_manifest{std::string(kImageManifestType), kZip, 500, "", {}, std::nullopt};
    Index index = provider_index(std::nullopt, linux_manifest, {"linux", "amd64"});
    Descriptor darwin_manifest{std::string(kImageManifestType), kOther, 501, "", {}, std::nullopt};
    index = provider_index(index, darwin_manifest, {"darwin", "arm64"});
    CHECK(index.artifact_type == kProviderArtifact);
    REQUIRE(index.manifests.size() == 2);
    CHECK(index.manifests[0].platform == Platform{"darwin", "arm64"});  // sorted by platform
    CHECK(index.manifests[1].artifact_type == kProviderTargetArtifact);

    // A platform pushed again replaces its entry; others are kept.
    Descriptor again{std::string(kImageManifestType), kOther, 502, "", {}, std::nullopt};
    index = provider_index(index, again, {"linux", "amd64"});
    REQUIRE(index.manifests.size() == 2);
    const auto linux_entry = platform_entry(index, {"linux", "amd64"});
    REQUIRE(linux_entry);
    CHECK(linux_entry->size == 502);
    CHECK_FALSE(platform_entry(index, {"windows", "amd64"}));

    const std::string text = write_index(index);
    CHECK_THAT(text, Contains(R"("artifactType":"application/vnd.opentofu.provider",)"));
    CHECK_THAT(text, Contains(R"("platform":{"architecture":"amd64","os":"linux"})"));
    const Index read = read_index(text);
    CHECK(write_index(read) == text);
}

TEST_CASE("an index entry that is ambiguous or not an image manifest is no entry", "[fleet]") {
    Index index;
    Descriptor entry{std::string(kImageManifestType),      kZip, 1,
                     std::string(kProviderTargetArtifact), {},   Platform{"linux", "amd64"}};
    index.manifests = {entry, entry};
    CHECK_FALSE(platform_entry(index, {"linux", "amd64"}));
    entry.media_type = std::string(kImageIndexType);
    index.manifests = {entry};
    CHECK_FALSE(platform_entry(index, {"linux", "amd64"}));
}

TEST_CASE("a module version's manifest keeps its download location", "[fleet]") {
    const Manifest manifest =
        module_manifest(kZip, 77, kZipLayerType, "https://r.example/archives/vpc-1.0.0.zip");
    const Manifest read = read_manifest(write_manifest(manifest));
    CHECK(read.artifact_type == kModuleArtifact);
    const auto layer = single_layer(read, kZipLayerType);
    REQUIRE(layer);
    CHECK(layer->annotations.at(std::string(kLocationAnnotation)) ==
          "https://r.example/archives/vpc-1.0.0.zip");
    Manifest two = manifest;
    two.layers.push_back(two.layers.front());
    CHECK_FALSE(single_layer(two, kZipLayerType));
    CHECK_FALSE(single_layer(manifest, "application/gzip"));
}

TEST_CASE("documents that are not manifests are refused with where and why", "[fleet]") {
    CHECK_THROWS_WITH(read_manifest("nope"), Contains("not JSON"));
    CHECK_THROWS_WITH(read_manifest("[]"), Contains("not a JSON object"));
    CHECK_THROWS_WITH(read_manifest(R"({"schemaVersion":1})"), Contains("schemaVersion"));
    CHECK_THROWS_WITH(
        read_manifest(
            R"({"schemaVersion":2,"mediaType":"application/vnd.oci.image.index.v1+json"})"),
        Contains("mediaType is not application/vnd.oci.image.manifest.v1+json"));
    CHECK_THROWS_WITH(read_manifest(R"({"schemaVersion":2,"layers":[]})"),
                      Contains("config is missing"));
    const std::string config =
        R"("config":{"mediaType":"application/vnd.oci.empty.v1+json","digest":")" +
        empty_config().digest + R"(","size":2})";
    CHECK_THROWS_WITH(read_manifest(R"({"schemaVersion":2,)" + config + "}"),
                      Contains("layers is not an array"));
    CHECK_THROWS_WITH(
        read_manifest(R"({"schemaVersion":2,)" + config +
                      R"(,"layers":[{"mediaType":"archive/zip","digest":"sha512:ab","size":1}]})"),
        Contains("layers[0].digest is not a sha256 digest"));
    CHECK_THROWS_WITH(read_manifest(R"({"schemaVersion":2,)" + config +
                                    R"(,"layers":[{"mediaType":"archive/zip","digest":")" + kZip +
                                    R"(","size":-1}]})"),
                      Contains("layers[0].size"));
    CHECK_THROWS_WITH(read_manifest(R"({"schemaVersion":2,)" + config +
                                    R"(,"layers":[{"digest":")" + kZip + R"(","size":1}]})"),
                      Contains("layers[0].mediaType is missing"));
    CHECK_THROWS_WITH(read_index(R"({"schemaVersion":2,"manifests":[{"mediaType":"x","digest":")" +
                                 kZip + R"(","size":1,"platform":{"os":"linux"}}]})"),
                      Contains("manifests[0].platform.architecture is missing"));
    CHECK_THROWS_WITH(read_manifest(std::string(kMaxManifestSize + 1, ' ')), Contains("bytes"));
    std::string many = R"({"schemaVersion":2,"manifests":[)";
    for (std::size_t i = 0; i <= kMaxDescriptors; ++i)
        many +=
            std::string(i ? "," : "") + R"({"mediaType":"x","digest":")" + kZip + R"(","size":1})";
    CHECK_THROWS_WITH(read_index(many + "]}"), Contains("over 512 entries"));
}

TEST_CASE("digests are sha256 and lowercase hex", "[fleet]") {
    CHECK(sha256_digest(kZip));
    CHECK_FALSE(sha256_digest("sha256:" + std::string(64, 'A')));
    CHECK_FALSE(sha256_digest("sha256:" + std::string(63, 'a')));
    CHECK_FALSE(sha256_digest("sha512:" + std::string(64, 'a')));
    CHECK_FALSE(sha256_digest(""));
}

}  // namespace test_oci_manifest
