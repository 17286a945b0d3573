#include "daemon/registry_cache/wire_answers.hpp"

#include <array>
#include <string_view>

namespace hostkeeper::daemon::registry_cache {
using proto::Json;

namespace {

bool ends_with(std::string_view text, std::string_view suffix) {
    return text.size() >= suffix.size() &&
           text.compare(text.size() - suffix.size(), suffix.size(), suffix) == 0;
}

// The archive kinds go-getter's decompressors know, by file name suffix.
constexpr std::array kArchiveSuffixes{".tar.gz", ".tgz", ".tar.bz2", ".tbz2", ".tar.xz",
                                      ".txz",    ".zip", ".tar.zst", ".tzst", ".tar"};

bool archive_named(std::string_view name) {
    for (const char* suffix : kArchiveSuffixes) {
        if (ends_with(name, suffix) && name.size() > std::string_view(suffix).size()) return true;
    }
    return false;
}

}  // namespace

bool safe_filename(std::string_view name) {
    if (name.empty() || name.size() > 200 || name == "." || name == "..") return false;
    for (const char c : name) {
        const bool ok = (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') ||
                        (c >= '0' && c <= '9') || c == '.' || c == '-' || c == '_' || c == '+';
        if (!ok) return false;
    }
    return true;
}

bool header_safe(std::string_view value) {
    for (const char c : value) {
        if (static_cast<unsigned char>(c) < 0x20 || c == 0x7f) return false;
    }
    return true;
}

Json module_versions_wire(const Json& normalized) {
    Json versions = Json::array();
    for (const Json& entry : normalized.at("versions"))
        versions.push_back({{"version", entry.at("version")}});
    return {{"modules", Json::array({Json{{"versions", std::move(versions)}}})}};
}

Json provider_versions_wire(const Json& normalized) {
    Json versions = Json::array();
    for (const Json& entry : normalized.at("versions")) {
        Json platforms = Json::array();
        for (const Json& platform : entry.at("platforms")) {
            const std::string& text = platform.get_ref<const std::string&>();
            const auto underscore = text.find('_');
            platforms.push_back(
                {{"os", text.substr(0, underscore)},
                 {"arch", underscore == std::string::npos ? "" : text.substr(underscore + 1)}});
        }
        versions.push_back({{"version", entry.at("version")},
                            {"protocols", entry.at("protocols")},
                            {"platforms", std::move(platforms)}});
    }
    Json out = {{"versions", std::move(versions)}};
    if (const auto it = normalized.find("warnings"); it != normalized.end()) out["warnings"] = *it;
    return out;
}

Json provider_package_wire(const Json& normalized, const std::string& archive_url,
                           const std::string& shasums_url) {
    Json out = {{"protocols", normalized.at("protocols")},
                {"os", normalized.at("os")},
                {"arch", normalized.at("arch")},
                {"filename", normalized.at("filename")},
                {"download_url", archive_url},
                {"shasum", normalized.at("shasum")}};
    if (normalized.contains("shasums_url")) out["shasums_url"] = shasums_url;
    if (normalized.contains("shasums_signature_url"))
        out["shasums_signature_url"] = shasums_url + ".sig";
    if (const auto it = normalized.find("signing_keys"); it != normalized.end())
        out["signing_keys"] = *it;
    return out;
}

Json mirror_index_wire(const Json& normalized) {
    Json versions = Json::object();
    for (const Json& entry : normalized.at("versions"))
        versions[entry.at("version").get<std::string>()] = Json::object();
    return {{"versions", std::move(versions)}};
}

std::optional<std::string> zh_sha256(const Json& hashes) {
    if (!hashes.is_array()) return std::nullopt;
    for (const Json& hash : hashes) {
        if (!hash.is_string()) continue;
        const std::string& text = hash.get_ref<const std::string&>();
        if (text.size() != 3 + 64 || text.compare(0, 3, "zh:") != 0) continue;
        std::string hex = text.substr(3);
        bool ok = true;
        for (char& c : hex) {
            if (c >= 'A' && c <= 'F') c = static_cast<char>(c - 'A' + 'a');
            ok = ok && ((c >= '0' && c <= '9') || (c >= 'a' && c <= 'f'));
        }
        if (ok) return hex;
    }
    return std::nullopt;
}

std::optional<ModuleArchive> cacheable_module_archive(const std::string& location) {
    std::string_view rest(location);
    std::size_t scheme_end = 0;
    if (rest.rfind("https://", 0) == 0) {
        scheme_end = 8;
    } else if (rest.rfind("http://", 0) == 0) {
        scheme_end = 7;
    } else {
        return std::nullopt;  // git::, s3::, a forced getter, a local path: passed through
    }
    if (rest.find('#') != std::string_view::npos) return std::nullopt;
    std::string_view query;
    if (const auto q = rest.find('?'); q != std::string_view::npos) {
        query = rest.substr(q);
        rest = rest.substr(0, q);
    }
    // go-getter's "URL//subdir": the first "//" after the scheme's.
    std::string_view subdir;
    if (const auto s = rest.find("//", scheme_end); s != std::string_view::npos) {
        subdir = rest.substr(s);
        rest = rest.substr(0, s);
    }
    const auto slash = rest.rfind('/');
    if (slash == std::string_view::npos || slash < scheme_end) return std::nullopt;
    const std::string_view name = rest.substr(slash + 1);
    // "?archive=zip" picks the unpacker where the name does not.
    std::string archive_param;
    for (std::string_view q = query.empty() ? query : query.substr(1); !q.empty();) {
        const auto amp = q.find('&');
        const std::string_view pair = q.substr(0, amp);
        if (pair.rfind("archive=", 0) == 0) archive_param = std::string(pair);
        if (amp == std::string_view::npos) break;
        q.remove_prefix(amp + 1);
    }
    if (!archive_named(name) && archive_param.empty()) return std::nullopt;
    if (!safe_filename(name)) return std::nullopt;
    for (const char c : subdir) {
        if (static_cast<unsigned char>(c) <= 0x20 || c == 0x7f || c == '"' || c == '\\')
            return std::nullopt;
    }
    ModuleArchive out;
    out.url = std::string(rest) + std::string(query);
    out.filename = std::string(name);
    out.suffix = std::string(subdir);
    if (!archive_param.empty()) {
        const std::string_view value = std::string_view(archive_param).substr(8);
        if (!safe_filename(value)) return std::nullopt;
        out.suffix += "?" + archive_param;
    }
    return out;
}

}  // namespace hostkeeper::daemon::registry_cache
