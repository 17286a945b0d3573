// The registry and network-mirror documents the daemon reads. The first byte
// picks the parser; the rest is the body, then (after the first NUL) the URL
// it came from, or a version constraint for the version lists. Version lists
// come out newest first, one parsed version per entry.
#include <stdexcept>

#include "daemon/http/url.hpp"
#include "daemon/registry/registry_documents.hpp"
#include "fuzz_support.hpp"
#include "proto/error.hpp"
#include "proto/registry_address.hpp"

using namespace hostkeeper;
using proto::Json;

namespace {

const std::string kUrl =
    "https://registry.example.com/v1/providers/hashicorp/aws/5.0.0/download/linux/amd64";

void check_list(const daemon::registry::VersionList& list, std::string_view constraint) {
    const Json& entries = list.body.at("versions");
    fuzz::require(entries.size() == list.versions.size(),
                  "a version list's body and versions differ in size");
    for (std::size_t i = 0; i < list.versions.size(); ++i) {
        fuzz::require(entries[i].at("version") == list.versions[i].to_string(),
                      "an entry's version is not its own");
        if (i > 0)
            fuzz::require(!(list.versions[i - 1] < list.versions[i]),
                          "a version list is not newest first");
    }
    (void)proto::serialize(list.body, proto::kMaxResponseFrameSize);
    try {
        const auto constraints = proto::VersionConstraints::parse(constraint);
        const Json allowed =
            daemon::registry::allowed_versions(list.body, list.versions, constraints);
        fuzz::require(allowed.size() <= list.versions.size(), "more versions allowed than listed");
    } catch (const proto::Error&) {
    }
}

void check_url(const Json& value) {
    const daemon::http::UrlParts parts = daemon::http::parse_url(value.get<std::string>());
    fuzz::require(parts.scheme == "http" || parts.scheme == "https",
                  "a resolved URL is not http(s)");
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
    if (size == 0) return 0;
    const auto [body, second] = fuzz::split_at_nul(fuzz::text_of(data + 1, size - 1));
    const std::string url = second.empty() ? kUrl : std::string(second);
    try {
        switch (data[0] % 6) {
            case 0:
                check_list(daemon::registry::parse_module_versions(body), second);
                break;
            case 1:
                check_list(daemon::registry::parse_provider_versions(body), second);
                break;
            case 2:
                check_list(daemon::registry::parse_mirror_index(body), second);
                break;
            case 3: {
                const Json package = daemon::registry::parse_provider_package(body, url);
                check_url(package.at("download_url"));
                const std::string hash = package.at("hashes").at(0).get<std::string>();
                fuzz::require(hash.size() == 67 && hash.rfind("zh:", 0) == 0,
                              "a package hash is not zh:SHA256");
                (void)proto::serialize(package, proto::kMaxResponseFrameSize);
                break;
            }
            case 4: {
                const Json version = daemon::registry::parse_mirror_version(body, url);
                for (const auto& [platform, archive] : version.at("archives").items()) {
                    fuzz::require(proto::is_platform(platform),
                                  "an archive's platform is not OS_ARCH");
                    check_url(archive.at("url"));
                }
                (void)proto::serialize(version, proto::kMaxResponseFrameSize);
                break;
            }
            default: {
                const std::string location =
                    daemon::registry::resolve_module_location(std::string(body), url);
                fuzz::require(location.empty() == body.empty(),
                              "a module location resolved to nothing");
                break;
            }
        }
    } catch (const proto::Error& e) {
        fuzz::require(e.code() == proto::ErrorCode::too_large,
                      "a document parser threw a proto::Error");
    } catch (const std::runtime_error&) {
        // The parsers' documented failure: a message naming what is wrong.
    }
    return 0;
}
