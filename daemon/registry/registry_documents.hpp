#pragma once
// What registry and network-mirror documents mean, computed as Terraform's
// clients do: the module registry (modules.v1), the provider registry
// (providers.v1) and the provider network mirror. Pure: no I/O. Each parser
// takes a body already known to be a 200 application/json response and
// returns the normalized answer object, or throws std::runtime_error naming
// what is wrong with the document.

#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "proto/messages.hpp"
#include "proto/sealed_file.hpp"
#include "proto/semver.hpp"

namespace hostkeeper::daemon::registry {

// One document's meaning, immutable and shared by the cache entry and every
// answer made from it.
struct RegistryDocument {
    RegistryDocument(std::string url_, proto::Json body_,
                     std::vector<proto::SemVer> versions_ = {});
    std::string url;   // the URL that answered (the endpoint, for a module download)
    proto::Json body;  // the normalized answer's own fields
    std::vector<proto::SemVer> versions;  // a version list's versions, parallel to body["versions"]
    // Made by the reply module at the first reply, spliced into every later one (event loop only).
    mutable std::string reply_fields;
    // The same fields as a JSON object in a sealed file, made by the reply
    // module at the first reply that may pass it, and passed with every later
    // one (event loop only); null until then, or when none could be made.
    mutable std::shared_ptr<const proto::SealedFile> reply_file;
};

// A list of versions, newest first: `body` is {"versions":[{"version":..,...}],
// ...} and `versions[i]` is body["versions"][i]'s version, parsed.
struct VersionList {
    proto::Json body = proto::Json::object();
    std::vector<proto::SemVer> versions;
};

// modules.v1 `:namespace/:name/:system/versions`: {"modules":[{"versions":[{"version":"1.0.0"}]}]}.
// Entries whose version is not a semantic version are left out and listed
// under "invalid" (Terraform skips them too).
VersionList parse_module_versions(std::string_view body);

// providers.v1 `:namespace/:type/versions`: {"versions":[{"version","protocols":[..],
// "platforms":[{"os","arch"}]}], "warnings":[..]}. Platforms become "os_arch" strings.
VersionList parse_provider_versions(std::string_view body);

// Mirror `:hostname/:namespace/:type/index.json`: {"versions":{"2.0.0":{}}}.
VersionList parse_mirror_index(std::string_view body);

// providers.v1 `:namespace/:type/:version/download/:os/:arch`: the package,
// its URLs resolved against `url` (the final URL), "hashes": ["zh:SHASUM"].
proto::Json parse_provider_package(std::string_view body, const std::string& url);

// Mirror `:hostname/:namespace/:type/:version.json`: {"archives":{"os_arch":
// {"url","hashes"}}}, archive URLs resolved against `url`.
proto::Json parse_mirror_version(std::string_view body, const std::string& url);

// The module source an X-Terraform-Get value (or a 200 body's "location")
// names: "/", "./" and "../" forms resolved against the download endpoint's
// URL `endpoint`, anything else (a go-getter address) as given.
std::string resolve_module_location(const std::string& location, const std::string& endpoint);

// The entries of body["versions"] (a VersionList's, or a document made from
// one) whose parsed `versions` the constraints allow, newest first.
proto::Json allowed_versions(const proto::Json& body, const std::vector<proto::SemVer>& versions,
                             const proto::VersionConstraints& constraints);

// The version Terraform installs when neither a constraint nor a lock file
// pins another: the newest release (no pre-release) in the provider
// versions document `body` (parse_provider_versions' form, newest first);
// none when there is none, or when that release is not built for
// `platform` ("os_arch"). Throws nlohmann's errors and proto::Error on a
// document of another form.
std::optional<std::string> newest_release(const proto::Json& body, const std::string& platform);

}  // namespace hostkeeper::daemon::registry
