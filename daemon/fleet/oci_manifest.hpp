#pragma once
// OCI image manifests and indexes (OCI Image Format 1.1) as the fleet tier
// writes and reads them, in the layouts OpenTofu installs from:
//   a provider version: an index (artifactType application/vnd.opentofu.provider)
//     of one image manifest per platform (artifactType
//     application/vnd.opentofu.provider-target, a "platform" with os and
//     architecture), each with one archive/zip layer: the provider package;
//   a module version: an image manifest (artifactType
//     application/vnd.opentofu.modulepkg) with one layer: the archive.
// Every image manifest's config is OCI's empty descriptor. Pure.

#include <cstddef>
#include <cstdint>
#include <map>
#include <optional>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

namespace hostkeeper::daemon::fleet {

inline constexpr std::string_view kImageManifestType = "application/vnd.oci.image.manifest.v1+json";
inline constexpr std::string_view kImageIndexType = "application/vnd.oci.image.index.v1+json";
inline constexpr std::string_view kEmptyConfigType = "application/vnd.oci.empty.v1+json";
inline constexpr std::string_view kProviderArtifact = "application/vnd.opentofu.provider";
inline constexpr std::string_view kProviderTargetArtifact =
    "application/vnd.opentofu.provider-target";
inline constexpr std::string_view kModuleArtifact = "application/vnd.opentofu.modulepkg";
inline constexpr std::string_view kZipLayerType = "archive/zip";
// The layer's file name (OCI's annotation), and the module archive's
// download location as the registry gave it (this tier's own annotation).
inline constexpr std::string_view kTitleAnnotation = "org.opencontainers.image.title";
inline constexpr std::string_view kLocationAnnotation = "dev.hostkeeper.download-location";

// The largest manifest or index read (what OCI Distribution 1.1 asks
// registries to accept), and the most entries read from one list.
inline constexpr std::size_t kMaxManifestSize = std::size_t{4} * 1024 * 1024;
inline constexpr std::size_t kMaxDescriptors = 512;
inline constexpr std::size_t kMaxAnnotations = 64;

// A document that is not a manifest or index of this shape: the message says
// what and where, never quoting the input.
class ManifestError : public std::runtime_error {
  public:
    using std::runtime_error::runtime_error;
};

struct Platform {
    std::string os;
    std::string architecture;
    bool operator==(const Platform&) const = default;
};

struct Descriptor {
    std::string media_type;
    std::string digest;  // "sha256:" and 64 lowercase hex digits
    std::uint64_t size = 0;
    std::string artifact_type;  // "" when not given
    std::map<std::string, std::string> annotations;
    std::optional<Platform> platform;
};

struct Manifest {
    std::string artifact_type;
    Descriptor config;
    std::vector<Descriptor> layers;
};

struct Index {
    std::string artifact_type;
    std::vector<Descriptor> manifests;
};

// Whether `digest` is "sha256:" and 64 lowercase hex digits, the only
// digests this tier writes or follows.
bool sha256_digest(std::string_view digest);

// Reads an image manifest or an index; unknown members are ignored. Throws
// ManifestError: not JSON, over kMaxManifestSize, not schemaVersion 2, a
// mediaType other than the one expected (when given), a descriptor without
// a media type, with a digest other than sha256 or a size that is not a
// whole number, or over kMaxDescriptors of them.
Manifest read_manifest(std::string_view body);
Index read_index(std::string_view body);

// The documents as JSON, members in a fixed order (their bytes, hashed, are
// their digests).
std::string write_manifest(const Manifest& manifest);
std::string write_index(const Index& index);

// OCI's empty config: "{}", 2 bytes.
Descriptor empty_config();
inline constexpr std::string_view kEmptyConfigBlob = "{}";

// One platform's manifest of a provider package (the zip's digest and size,
// its file name).
Manifest provider_manifest(std::string_view zip_digest, std::uint64_t zip_size,
                           std::string_view filename);
// `index` (nullopt: a new one) with `manifest` as `platform`'s entry; an
// entry of the same platform is replaced, others are kept.
Index provider_index(std::optional<Index> index, Descriptor manifest, const Platform& platform);
// A module version's manifest: its archive (digest, size, media type) and the
// download location it was fetched from.
Manifest module_manifest(std::string_view archive_digest, std::uint64_t archive_size,
                         std::string_view media_type, std::string_view download_location);

// The one layer of `manifest` with `media_type`; nullopt when there is none
// or more than one.
std::optional<Descriptor> single_layer(const Manifest& manifest, std::string_view media_type);
// The entry of `index` for `platform` whose artifactType is the provider
// target's; nullopt when there is none or more than one.
std::optional<Descriptor> platform_entry(const Index& index, const Platform& platform);

}  // namespace hostkeeper::daemon::fleet
