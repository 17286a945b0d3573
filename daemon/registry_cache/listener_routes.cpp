#include "daemon/registry_cache/listener_routes.hpp"

#include <vector>

#include "proto/text_rules.hpp"

namespace hostkeeper::daemon::registry_cache {
namespace {

inline constexpr std::size_t kMaxTarget = 4096;
// A route has at most 10; an older setup's URL (OldPrefixTarget) one more.
inline constexpr std::size_t kMaxSegments = 12;

[[noreturn]] void not_served(const std::string& why) {
    throw RouteError(why);
}

int hex_value(char c) {
    if (c >= '0' && c <= '9') return c - '0';
    if (c >= 'a' && c <= 'f') return c - 'a' + 10;
    if (c >= 'A' && c <= 'F') return c - 'A' + 10;
    return -1;
}

std::string decode_segment(std::string_view segment) {
    std::string out;
    out.reserve(segment.size());
    for (std::size_t i = 0; i < segment.size(); ++i) {
        char c = segment[i];
        if (c == '%') {
            const int hi = i + 2 < segment.size() ? hex_value(segment[i + 1]) : -1;
            const int lo = hi >= 0 ? hex_value(segment[i + 2]) : -1;
            if (lo < 0) not_served("a malformed percent-escape in the path");
            c = static_cast<char>(hi * 16 + lo);
            i += 2;
        }
        if (static_cast<unsigned char>(c) < 0x20 || c == 0x7f || c == '/' || c == '\\')
            not_served("a path segment with a control character or a slash");
        out.push_back(c);
    }
    if (out.empty() || out == "." || out == "..")
        not_served("an empty, \".\" or \"..\" path segment");
    return out;
}

// v1/HOST/modules/...: `s` starts after "v1".
Route registry_route(const std::vector<std::string>& s) {
    // s[0] = "v1", s[1] = HOST, s[2] = modules|providers
    if (s.size() < 4) not_served("no such registry path");
    Route r;
    r.host = s[1];
    const std::size_t n = s.size();
    if (s[2] == "modules") {
        if (n == 7 && s[6] == "versions") {
            r.kind = RouteKind::module_versions;
        } else if (n == 8 && s[7] == "download") {
            r.kind = RouteKind::module_download;
            r.version = s[6];
        } else {
            not_served("no such module registry path");
        }
        r.name_space = s[3];
        r.name = s[4];
        r.system = s[5];
        return r;
    }
    if (s[2] == "providers") {
        if (n == 6 && s[5] == "versions") {
            r.kind = RouteKind::provider_versions;
        } else if ((n == 9 || n == 10) && s[6] == "download") {
            r.version = s[5];
            r.os = s[7];
            r.arch = s[8];
            if (n == 9) {
                r.kind = RouteKind::provider_package;
            } else if (s[9] == "SHA256SUMS") {
                r.kind = RouteKind::provider_shasums;
            } else if (s[9] == "SHA256SUMS.sig") {
                r.kind = RouteKind::provider_signature;
            } else {
                not_served("no such provider registry path");
            }
        } else {
            not_served("no such provider registry path");
        }
        r.name_space = s[3];
        r.name = s[4];
        return r;
    }
    not_served("no such registry service (modules, providers)");
}

// The route that the decoded segments `s` name.
Route route_of(const std::vector<std::string>& s) {
    if (s.size() < 2) not_served("no such path");
    Route r;
    if (s[0] == "v1") {
        r = registry_route(s);
    } else if (s[0] == "archives" && s.size() == 4 && (s[1] == "providers" || s[1] == "modules")) {
        if (!proto::is_sha256_hex(s[2]))
            not_served("an archive key must be 64 lowercase hex digits");
        r.kind = s[1] == "providers" ? RouteKind::provider_archive : RouteKind::module_archive;
        r.key = s[1] + "/" + s[2];
        r.filename = s[3];
    } else if (s[0] == "mirror" && s.size() == 5) {
        r.host = s[1];
        r.name_space = s[2];
        r.name = s[3];
        const std::string& last = s[4];
        constexpr std::string_view json = ".json";
        if (last == "index.json") {
            r.kind = RouteKind::mirror_index;
        } else if (last.size() > json.size() &&
                   last.compare(last.size() - json.size(), json.size(), json) == 0) {
            r.kind = RouteKind::mirror_version;
            r.version = last.substr(0, last.size() - json.size());
        } else {
            not_served("no such network mirror path");
        }
    } else {
        not_served("no such path");
    }
    return r;
}

}  // namespace

Route parse_target(std::string_view target) {
    if (target.size() > kMaxTarget) not_served("the request target is too long");
    if (target.empty() || target.front() != '/') not_served("the request target is not a path");
    const auto query = target.find_first_of("?#");
    std::string_view path = target.substr(0, query);
    path.remove_prefix(1);
    std::vector<std::string> segments;
    while (!path.empty()) {
        if (segments.size() == kMaxSegments) not_served("too many path segments");
        const auto slash = path.find('/');
        segments.push_back(decode_segment(path.substr(0, slash)));
        if (slash == std::string_view::npos) break;
        path.remove_prefix(slash + 1);
        if (path.empty()) segments.emplace_back();  // a trailing slash: "" (never a valid route)
    }
    if (segments.empty() || segments.back().empty()) not_served("no such path");
    const std::string& first = segments.front();
    if (segments.size() > 1 && first != "v1" && first != "archives" && first != "mirror") {
        bool prefixed = true;
        try {
            route_of({segments.begin() + 1, segments.end()});
        } catch (const RouteError&) {
            prefixed = false;
        }
        if (prefixed)
            throw OldPrefixTarget("the registry cache's URLs changed: run `terraform init` again");
    }
    return route_of(segments);
}

std::string route_path(const Route& r) {
    const std::string module = r.name_space + "/" + r.name + "/" + r.system;
    const std::string provider = r.name_space + "/" + r.name;
    std::string package = "v1/" + r.host + "/providers/" + provider + "/" + r.version +
                          "/download/" + r.os + "/" + r.arch;
    switch (r.kind) {
        case RouteKind::module_versions:
            return "v1/" + r.host + "/modules/" + module + "/versions";
        case RouteKind::module_download:
            return "v1/" + r.host + "/modules/" + module + "/" + r.version + "/download";
        case RouteKind::provider_versions:
            return "v1/" + r.host + "/providers/" + provider + "/versions";
        case RouteKind::provider_package:
            return package;
        case RouteKind::provider_shasums:
            return package + "/SHA256SUMS";
        case RouteKind::provider_signature:
            return package + "/SHA256SUMS.sig";
        case RouteKind::provider_archive:
        case RouteKind::module_archive:
            return "archives/" + r.key + "/" + r.filename;
        case RouteKind::mirror_index:
            return "mirror/" + r.host + "/" + provider + "/index.json";
        case RouteKind::mirror_version:
            return "mirror/" + r.host + "/" + provider + "/" + r.version + ".json";
    }
    return {};
}

}  // namespace hostkeeper::daemon::registry_cache
