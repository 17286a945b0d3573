// A request target as any local process may send it to the registry cache's
// listener. A target accepted names one route whose fields are plain path
// segments (no slash, no control character, no dot segment), whose archive
// key is KIND/64-hex, and whose route_path parses back to the same route.
// A target refused as an older setup's URL (OldPrefixTarget) is one whose
// path after its first segment is a route.
#include <string>

#include "daemon/registry_cache/listener_routes.hpp"
#include "fuzz_support.hpp"

using namespace hostkeeper;
using daemon::registry_cache::OldPrefixTarget;
using daemon::registry_cache::Route;
using daemon::registry_cache::RouteError;
using daemon::registry_cache::RouteKind;

namespace {

bool plain(const std::string& field) {
    if (field == "." || field == "..") return false;
    for (const char c : field) {
        if (static_cast<unsigned char>(c) < 0x20 || c == 0x7f || c == '/' || c == '\\')
            return false;
    }
    return true;
}

bool same(const Route& a, const Route& b) {
    return a.kind == b.kind && a.host == b.host && a.name_space == b.name_space &&
           a.name == b.name && a.system == b.system && a.version == b.version && a.os == b.os &&
           a.arch == b.arch && a.key == b.key && a.filename == b.filename;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
    const std::string_view target = fuzz::text_of(data, size);
    Route r;
    try {
        r = daemon::registry_cache::parse_target(target);
    } catch (const OldPrefixTarget&) {
        const auto second = target.find('/', 1);
        fuzz::require(second != std::string_view::npos, "an old URL without a second segment");
        try {
            (void)daemon::registry_cache::parse_target(target.substr(second));
        } catch (const RouteError&) {
            fuzz::require(false, "an old URL whose path after its first segment is no route");
        }
        return 0;
    } catch (const RouteError&) {
        return 0;
    }
    for (const std::string* field :
         {&r.host, &r.name_space, &r.name, &r.system, &r.os, &r.arch, &r.filename}) {
        fuzz::require(plain(*field), "an accepted route has a field that is not a plain segment");
    }
    // A mirror's VERSION is part of the segment VERSION.json (it may be "."
    // there: the caller's parse_semver refuses it).
    fuzz::require(plain(r.kind == RouteKind::mirror_version ? r.version + ".json" : r.version),
                  "an accepted route's version is not a plain segment");
    const bool archive =
        r.kind == RouteKind::provider_archive || r.kind == RouteKind::module_archive;
    if (archive) {
        const std::string kind = r.kind == RouteKind::provider_archive ? "providers/" : "modules/";
        fuzz::require(
            r.key.size() == kind.size() + 64 && r.key.compare(0, kind.size(), kind) == 0 &&
                r.key.find_first_not_of("0123456789abcdef", kind.size()) == std::string::npos,
            "an archive key is not KIND/64 lowercase hex");
        fuzz::require(!r.filename.empty(), "an archive has no file name");
    } else {
        fuzz::require(!r.host.empty() && !r.name_space.empty() && !r.name.empty(),
                      "a registry or mirror route without host, namespace or name");
    }
    // route_path does not escape: where no field holds a character the
    // target syntax gives a meaning to, it parses back to the same route.
    const std::string path = daemon::registry_cache::route_path(r);
    if (path.find_first_of("%?#") == std::string::npos) {
        Route again;
        try {
            again = daemon::registry_cache::parse_target("/" + path);
        } catch (const RouteError&) {
            fuzz::require(false, "route_path of an accepted route is refused");
        }
        fuzz::require(same(again, r), "route_path parses back to another route");
    }
    return 0;
}
