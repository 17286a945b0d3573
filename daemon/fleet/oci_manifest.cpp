#include "daemon/fleet/oci_manifest.hpp"

#include <algorithm>
#include <tuple>
#include <utility>

#include "proto/json.hpp"
#include "proto/text_rules.hpp"

namespace hostkeeper::daemon::fleet {

namespace {

using proto::Json;

// Where in the document a problem is, for messages: "layers[3].digest".
std::string member(const std::string& where, std::string_view name) {
    return where.empty() ? std::string(name) : where + "." + std::string(name);
}

std::string string_member(const Json& object, std::string_view name, const std::string& where,
                          bool required) {
    const auto found = object.find(std::string(name));
    if (found == object.end()) {
        if (required) throw ManifestError(member(where, name) + " is missing");
        return "";
    }
    if (!found->is_string() || found->get_ref<const std::string&>().size() > 1024)
        throw ManifestError(member(where, name) + " is not a string of at most 1024 bytes");
    return found->get<std::string>();
}

std::map<std::string, std::string> read_annotations(const Json& object, const std::string& where) {
    std::map<std::string, std::string> annotations;
    const auto found = object.find("annotations");
    if (found == object.end() || found->is_null()) return annotations;
    if (!found->is_object() || found->size() > kMaxAnnotations)
        throw ManifestError(member(where, "annotations") + " is not an object of at most " +
                            std::to_string(kMaxAnnotations) + " strings");
    for (const auto& [name, value] : found->items()) {
        if (!value.is_string() || value.get_ref<const std::string&>().size() > 4096)
            throw ManifestError(member(where, "annotations") +
                                " holds a value that is not a string of at most 4096 bytes");
        annotations.emplace(name, value.get<std::string>());
    }
    return annotations;
}

Descriptor read_descriptor(const Json& object, const std::string& where) {
    if (!object.is_object()) throw ManifestError(where + " is not an object");
    Descriptor descriptor;
    descriptor.media_type = string_member(object, "mediaType", where, true);
    if (descriptor.media_type.empty())
        throw ManifestError(member(where, "mediaType") + " is empty");
    descriptor.digest = string_member(object, "digest", where, true);
    if (!sha256_digest(descriptor.digest))
        throw ManifestError(member(where, "digest") + " is not a sha256 digest");
    const auto size = object.find("size");
    if (size == object.end() || !size->is_number_unsigned())
        throw ManifestError(member(where, "size") + " is not a whole number of bytes");
    descriptor.size = size->get<std::uint64_t>();
    descriptor.artifact_type = string_member(object, "artifactType", where, false);
    descriptor.annotations = read_annotations(object, where);
    if (const auto platform = object.find("platform"); platform != object.end()) {
        const std::string at = member(where, "platform");
        if (!platform->is_object()) throw ManifestError(at + " is not an object");
        descriptor.platform = Platform{string_member(*platform, "os", at, true),
                                       string_member(*platform, "architecture", at, true)};
    }
    return descriptor;
}

std::vector<Descriptor> read_descriptors(const Json& document, std::string_view name) {
    const auto found = document.find(std::string(name));
    if (found == document.end() || !found->is_array())
        throw ManifestError(std::string(name) + " is not an array");
    if (found->size() > kMaxDescriptors)
        throw ManifestError(std::string(name) + " has over " + std::to_string(kMaxDescriptors) +
                            " entries");
    std::vector<Descriptor> descriptors;
    descriptors.reserve(found->size());
    for (std::size_t i = 0; i < found->size(); ++i)
        descriptors.push_back(
            read_descriptor((*found)[i], std::string(name) + "[" + std::to_string(i) + "]"));
    return descriptors;
}

// The document's object, checked for schemaVersion 2 and, when it names
// one, the media type expected.
Json read_document(std::string_view body, std::string_view media_type) {
    if (body.size() > kMaxManifestSize)
        throw ManifestError("the document is over " + std::to_string(kMaxManifestSize) + " bytes");
    Json document;
    try {
        document = proto::parse_json(body, 8);
    } catch (const proto::JsonError& e) {
        throw ManifestError(std::string("the document is not JSON: ") + e.what());
    }
    if (!document.is_object()) throw ManifestError("the document is not a JSON object");
    const auto version = document.find("schemaVersion");
    if (version == document.end() || !version->is_number_unsigned() ||
        version->get<unsigned>() != 2)
        throw ManifestError("schemaVersion is not 2");
    const std::string given = string_member(document, "mediaType", "", false);
    if (!given.empty() && given != media_type)
        throw ManifestError("mediaType is not " + std::string(media_type));
    return document;
}

Json descriptor_json(const Descriptor& descriptor) {
    Json out = Json::object();
    out["mediaType"] = descriptor.media_type;
    if (!descriptor.artifact_type.empty()) out["artifactType"] = descriptor.artifact_type;
    out["digest"] = descriptor.digest;
    out["size"] = descriptor.size;
    if (descriptor.platform)
        out["platform"] = {{"architecture", descriptor.platform->architecture},
                           {"os", descriptor.platform->os}};
    if (!descriptor.annotations.empty()) {
        Json annotations = Json::object();
        for (const auto& [name, value] : descriptor.annotations) annotations[name] = value;
        out["annotations"] = std::move(annotations);
    }
    return out;
}

// An artifact of one layer, with OCI's empty config.
Manifest one_layer_manifest(std::string_view artifact_type, std::string_view media_type,
                            std::string_view digest, std::uint64_t size) {
    Manifest manifest;
    manifest.artifact_type = artifact_type;
    manifest.config = empty_config();
    Descriptor layer;
    layer.media_type = media_type;
    layer.digest = digest;
    layer.size = size;
    manifest.layers.push_back(std::move(layer));
    return manifest;
}

}  // namespace

bool sha256_digest(std::string_view digest) {
    constexpr std::string_view prefix = "sha256:";
    return digest.substr(0, prefix.size()) == prefix &&
           proto::is_sha256_hex(digest.substr(prefix.size()));
}

Manifest read_manifest(std::string_view body) {
    const Json document = read_document(body, kImageManifestType);
    Manifest manifest;
    manifest.artifact_type = string_member(document, "artifactType", "", false);
    const auto config = document.find("config");
    if (config == document.end()) throw ManifestError("config is missing");
    manifest.config = read_descriptor(*config, "config");
    manifest.layers = read_descriptors(document, "layers");
    return manifest;
}

Index read_index(std::string_view body) {
    const Json document = read_document(body, kImageIndexType);
    Index index;
    index.artifact_type = string_member(document, "artifactType", "", false);
    index.manifests = read_descriptors(document, "manifests");
    return index;
}

std::string write_manifest(const Manifest& manifest) {
    Json out = Json::object();
    out["schemaVersion"] = 2;
    out["mediaType"] = kImageManifestType;
    if (!manifest.artifact_type.empty()) out["artifactType"] = manifest.artifact_type;
    out["config"] = descriptor_json(manifest.config);
    Json layers = Json::array();
    for (const Descriptor& layer : manifest.layers) layers.push_back(descriptor_json(layer));
    out["layers"] = std::move(layers);
    return out.dump();
}

std::string write_index(const Index& index) {
    Json out = Json::object();
    out["schemaVersion"] = 2;
    out["mediaType"] = kImageIndexType;
    if (!index.artifact_type.empty()) out["artifactType"] = index.artifact_type;
    Json manifests = Json::array();
    for (const Descriptor& entry : index.manifests) manifests.push_back(descriptor_json(entry));
    out["manifests"] = std::move(manifests);
    return out.dump();
}

Descriptor empty_config() {
    Descriptor config;
    config.media_type = kEmptyConfigType;
    // The SHA-256 of kEmptyConfigBlob, as OCI's image spec gives it.
    config.digest = "sha256:44136fa355b3678a1146ad16f7e8649e94fb4fc21fe77e8310c060f61caaff8a";
    config.size = kEmptyConfigBlob.size();
    return config;
}

Manifest provider_manifest(std::string_view zip_digest, std::uint64_t zip_size,
                           std::string_view filename) {
    Manifest manifest =
        one_layer_manifest(kProviderTargetArtifact, kZipLayerType, zip_digest, zip_size);
    if (!filename.empty()) manifest.layers.front().annotations.emplace(kTitleAnnotation, filename);
    return manifest;
}

Index provider_index(std::optional<Index> index, Descriptor manifest, const Platform& platform) {
    Index out = index ? std::move(*index) : Index{};
    out.artifact_type = kProviderArtifact;
    std::erase_if(out.manifests, [&](const Descriptor& entry) {
        return entry.artifact_type == kProviderTargetArtifact && entry.platform == platform;
    });
    manifest.media_type = kImageManifestType;
    manifest.artifact_type = kProviderTargetArtifact;
    manifest.platform = platform;
    out.manifests.push_back(std::move(manifest));
    std::sort(out.manifests.begin(), out.manifests.end(),
              [](const Descriptor& a, const Descriptor& b) {
                  const Platform none;
                  const Platform& pa = a.platform ? *a.platform : none;
                  const Platform& pb = b.platform ? *b.platform : none;
                  return std::tie(pa.os, pa.architecture, a.digest) <
                         std::tie(pb.os, pb.architecture, b.digest);
              });
    return out;
}

Manifest module_manifest(std::string_view archive_digest, std::uint64_t archive_size,
                         std::string_view media_type, std::string_view download_location) {
    Manifest manifest =
        one_layer_manifest(kModuleArtifact, media_type, archive_digest, archive_size);
    manifest.layers.front().annotations.emplace(kLocationAnnotation, download_location);
    return manifest;
}

std::optional<Descriptor> single_layer(const Manifest& manifest, std::string_view media_type) {
    std::optional<Descriptor> found;
    for (const Descriptor& layer : manifest.layers) {
        if (layer.media_type != media_type) continue;
        if (found) return std::nullopt;
        found = layer;
    }
    return found;
}

std::optional<Descriptor> platform_entry(const Index& index, const Platform& platform) {
    std::optional<Descriptor> found;
    for (const Descriptor& entry : index.manifests) {
        if (entry.artifact_type != kProviderTargetArtifact || entry.platform != platform) continue;
        if (entry.media_type != kImageManifestType || found) return std::nullopt;
        found = entry;
    }
    return found;
}

}  // namespace hostkeeper::daemon::fleet
