#pragma once
// What a request target on the registry cache's listener asks for. Pure: the
// path read as proto/PROTOCOL.md ("The registry cache") lays it out.

#include <stdexcept>
#include <string>
#include <string_view>

namespace hostkeeper::daemon::registry_cache {

enum class RouteKind {
    module_versions,     // v1/HOST/modules/NS/NAME/SYSTEM/versions
    module_download,     // v1/HOST/modules/NS/NAME/SYSTEM/VERSION/download
    provider_versions,   // v1/HOST/providers/NS/TYPE/versions
    provider_package,    // v1/HOST/providers/NS/TYPE/VERSION/download/OS/ARCH
    provider_shasums,    // ... /download/OS/ARCH/SHA256SUMS
    provider_signature,  // ... /download/OS/ARCH/SHA256SUMS.sig
    provider_archive,    // archives/providers/SHA256/FILENAME
    module_archive,      // archives/modules/KEY/FILENAME
    mirror_index,        // mirror/HOSTNAME/NS/TYPE/index.json
    mirror_version,      // mirror/HOSTNAME/NS/TYPE/VERSION.json
};

struct Route {
    RouteKind kind = RouteKind::module_versions;
    std::string host;  // the registry host (for a mirror: the provider's HOSTNAME), as in the URL
    std::string name_space;  // NS
    std::string name;        // a module's NAME, a provider's TYPE
    std::string system;      // a module's SYSTEM
    std::string version;     // as in the URL (parsed by the caller)
    std::string os, arch;
    std::string key;       // an archive's store key ("providers/SHA256", "modules/KEY")
    std::string filename;  // an archive's file name
    // The listener the request came to ("http://127.0.0.1:PORT/"), set by
    // the gate: the URLs in its answer point there.
    std::string base_url;
    // Whether it came to the registry port: only its answers are kept on
    // disk (a run's own port changes with every run).
    bool registry_port = true;
};

// Thrown for a target that names nothing the listener serves (a 404).
class RouteError : public std::runtime_error {
  public:
    using std::runtime_error::runtime_error;
};

// Thrown for a target that is a route below one extra first segment: the
// form of the URLs older setups wrote (/CAPABILITY/v1/...), which Terraform
// may still hold from an older host block. Never served (a 410).
class OldPrefixTarget : public RouteError {
  public:
    using RouteError::RouteError;
};

// The route a request target names. The query is ignored; segments are
// percent-decoded and may not decode to "/", "..", "." or control characters.
Route parse_target(std::string_view target);

// The path of `route` below the listener's base URL (the inverse of parse_target).
std::string route_path(const Route& route);

}  // namespace hostkeeper::daemon::registry_cache
