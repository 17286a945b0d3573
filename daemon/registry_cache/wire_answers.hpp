#pragma once
// The registry cache's answers in the wire formats Terraform and OpenTofu
// read (module registry, provider registry, network mirror), made from the
// daemon's normalized documents, with every download pointed at the listener.
// Pure: no I/O.

#include <optional>
#include <string>
#include <string_view>

#include "proto/json.hpp"

namespace hostkeeper::daemon::registry_cache {

// {"modules":[{"versions":[{"version":"1.0.0"},...]}]}
proto::Json module_versions_wire(const proto::Json& normalized);

// {"versions":[{"version","protocols","platforms":[{"os","arch"}]}],"warnings"}
proto::Json provider_versions_wire(const proto::Json& normalized);

// The provider registry's package document with download_url pointed at
// `archive_url` and the SHA256SUMS pair at `shasums_url` (+ ".sig"); the
// signing keys and shasum as the registry gave them.
proto::Json provider_package_wire(const proto::Json& normalized, const std::string& archive_url,
                                  const std::string& shasums_url);

// Network mirror index.json: {"versions":{"1.0.0":{}}}.
proto::Json mirror_index_wire(const proto::Json& normalized);

// A mirror's VERSION.json with each archive's "url" replaced by what
// `archive_url(platform, entry)` gives (nullopt: kept as the mirror gave it).
template <typename ArchiveUrl>
proto::Json mirror_version_wire(const proto::Json& normalized, ArchiveUrl&& archive_url) {
    proto::Json out = {{"archives", proto::Json::object()}};
    for (const auto& [platform, entry] : normalized.at("archives").items()) {
        proto::Json copy = entry;
        if (std::optional<std::string> url = archive_url(platform, entry)) copy["url"] = *url;
        out["archives"][platform] = std::move(copy);
    }
    return out;
}

// A file name the listener puts in its URLs: letters, digits, ".-_+", not
// "." or "..", at most 200 characters.
bool safe_filename(std::string_view name);

// Whether `value` may go into a header line: a control character (a CR or
// LF above all) would add headers or responses.
bool header_safe(std::string_view value);

// The sha256 (lowercase hex) a provider package's "zh:" hash names, if any.
std::optional<std::string> zh_sha256(const proto::Json& hashes);

// A module's download location as the cache serves it: an http(s) archive
// is split into what to fetch (`url`, go-getter's "//subdir" removed), the
// archive's file name (with the extension go-getter picks the unpacker by)
// and what to append to the listener's URL ("//subdir", "?archive=zip");
// anything else (git::, s3::, a URL go-getter would probe with
// ?terraform-get=1) is not cacheable: nullopt, passed through as given.
struct ModuleArchive {
    std::string url;
    std::string filename;
    std::string suffix;
};
std::optional<ModuleArchive> cacheable_module_archive(const std::string& location);

}  // namespace hostkeeper::daemon::registry_cache
