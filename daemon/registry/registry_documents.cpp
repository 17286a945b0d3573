#include "daemon/registry/registry_documents.hpp"

#include <numeric>
#include <stdexcept>

#include "daemon/http/url.hpp"
#include "proto/json.hpp"
#include "proto/registry_address.hpp"
#include "proto/text_rules.hpp"

namespace hostkeeper::daemon::registry {

RegistryDocument::RegistryDocument(std::string url_, proto::Json body_,
                                   std::vector<proto::SemVer> versions_)
    : url(std::move(url_)), body(std::move(body_)), versions(std::move(versions_)) {}

namespace {
using proto::Json;

[[noreturn]] void bad(const std::string& why) {
    throw std::runtime_error(why);
}

Json parse_object(std::string_view body) {
    Json doc;
    try {
        doc = proto::parse_json(body);
    } catch (const proto::JsonError& e) {
        bad(std::string("the document is ") + e.what());
    }
    if (!doc.is_object())
        bad("the document is a JSON " + std::string(doc.type_name()) + ", not an object");
    return doc;
}

const Json& member(const Json& object, const char* name, Json::value_t type,
                   const std::string& where) {
    const auto it = object.find(name);
    const std::string path = where.empty() ? std::string("\"") + name + "\"" : where + "." + name;
    if (it == object.end()) bad("the document has no " + path);
    if (it->type() != type) {
        bad(path + " is a JSON " + it->type_name() + ", not " +
            (type == Json::value_t::array    ? "an array"
             : type == Json::value_t::object ? "an object"
                                             : "a string"));
    }
    return *it;
}

// An optional member: absent is fine, the wrong type is not.
const Json* optional_member(const Json& object, const char* name, Json::value_t type,
                            const std::string& where) {
    if (!object.contains(name) || object.at(name).is_null()) return nullptr;
    return &member(object, name, type, where);
}

Json string_array(const Json& array, const std::string& where) {
    for (std::size_t i = 0; i < array.size(); ++i) {
        if (!array[i].is_string()) bad(where + "[" + std::to_string(i) + "] is not a string");
    }
    return array;
}

// Newest first; entries with the same precedence keep their order.
VersionList sorted(std::vector<std::pair<proto::SemVer, Json>> entries, Json invalid, Json extra) {
    std::stable_sort(entries.begin(), entries.end(),
                     [](const auto& a, const auto& b) { return b.first < a.first; });
    VersionList list;
    list.body["versions"] = Json::array();
    for (auto& [version, entry] : entries) {
        list.versions.push_back(version);
        list.body["versions"].push_back(std::move(entry));
    }
    if (!invalid.empty()) list.body["invalid"] = std::move(invalid);
    for (auto& [key, value] : extra.items()) list.body[key] = std::move(value);
    return list;
}

std::string absolute(const std::string& base, const std::string& reference,
                     const std::string& where) {
    try {
        std::string url = http::resolve_url(base, reference);
        const http::UrlParts parts = http::parse_url(url);
        if (parts.scheme != "https" && parts.scheme != "http")
            bad(where + " \"" + reference + "\" is not an http(s) URL");
        return url;
    } catch (const http::UrlError& e) {
        bad(where + " \"" + reference + "\": " + e.what());
    }
}

}  // namespace

VersionList parse_module_versions(std::string_view body) {
    const Json doc = parse_object(body);
    const Json& modules = member(doc, "modules", Json::value_t::array, "");
    if (modules.empty()) bad("\"modules\" is empty; it must list the requested module first");
    if (!modules[0].is_object()) bad("modules[0] is not an object");
    const Json& versions = member(modules[0], "versions", Json::value_t::array, "modules[0]");
    std::vector<std::pair<proto::SemVer, Json>> entries;
    Json invalid = Json::array();
    for (std::size_t i = 0; i < versions.size(); ++i) {
        const std::string where = "modules[0].versions[" + std::to_string(i) + "]";
        if (!versions[i].is_object()) bad(where + " is not an object");
        const std::string& text = member(versions[i], "version", Json::value_t::string, where)
                                      .get_ref<const std::string&>();
        if (const auto version = proto::try_parse_semver(text)) {
            entries.emplace_back(*version, Json{{"version", version->to_string()}});
        } else {
            invalid.push_back(text);
        }
    }
    return sorted(std::move(entries), std::move(invalid), Json::object());
}

VersionList parse_provider_versions(std::string_view body) {
    const Json doc = parse_object(body);
    const Json& versions = member(doc, "versions", Json::value_t::array, "");
    std::vector<std::pair<proto::SemVer, Json>> entries;
    Json invalid = Json::array();
    for (std::size_t i = 0; i < versions.size(); ++i) {
        const std::string where = "versions[" + std::to_string(i) + "]";
        const Json& item = versions[i];
        if (!item.is_object()) bad(where + " is not an object");
        const std::string& text =
            member(item, "version", Json::value_t::string, where).get_ref<const std::string&>();
        Json entry = Json::object();
        Json protocols = Json::array();
        if (const Json* p = optional_member(item, "protocols", Json::value_t::array, where)) {
            protocols = string_array(*p, where + ".protocols");
        }
        Json platforms = Json::array();
        if (const Json* list = optional_member(item, "platforms", Json::value_t::array, where)) {
            for (std::size_t k = 0; k < list->size(); ++k) {
                const std::string at = where + ".platforms[" + std::to_string(k) + "]";
                if (!(*list)[k].is_object()) bad(at + " is not an object");
                const std::string& os = member((*list)[k], "os", Json::value_t::string, at)
                                            .get_ref<const std::string&>();
                const std::string& arch = member((*list)[k], "arch", Json::value_t::string, at)
                                              .get_ref<const std::string&>();
                std::string platform = os;
                platform.append("_").append(arch);
                platforms.push_back(std::move(platform));
            }
        }
        const auto version = proto::try_parse_semver(text);
        if (!version) {
            invalid.push_back(text);
            continue;
        }
        entry["version"] = version->to_string();
        entry["protocols"] = std::move(protocols);
        entry["platforms"] = std::move(platforms);
        entries.emplace_back(*version, std::move(entry));
    }
    Json extra = Json::object();
    if (const Json* warnings = optional_member(doc, "warnings", Json::value_t::array, "")) {
        extra["warnings"] = string_array(*warnings, "warnings");
    }
    return sorted(std::move(entries), std::move(invalid), std::move(extra));
}

VersionList parse_mirror_index(std::string_view body) {
    const Json doc = parse_object(body);
    const Json& versions = member(doc, "versions", Json::value_t::object, "");
    std::vector<std::pair<proto::SemVer, Json>> entries;
    Json invalid = Json::array();
    for (const auto& [text, value] : versions.items()) {
        if (!value.is_object())
            bad("versions[\"" + text + "\"] is a JSON " + value.type_name() + ", not an object");
        if (const auto version = proto::try_parse_semver(text)) {
            entries.emplace_back(*version, Json{{"version", version->to_string()}});
        } else {
            invalid.push_back(text);
        }
    }
    return sorted(std::move(entries), std::move(invalid), Json::object());
}

Json parse_provider_package(std::string_view body, const std::string& url) {
    const Json doc = parse_object(body);
    const auto text = [&doc](const char* name) {
        return member(doc, name, Json::value_t::string, "").get<std::string>();
    };
    Json out = Json::object();
    const std::string os = text("os");
    const std::string arch = text("arch");
    out["os"] = os;
    out["arch"] = arch;
    out["platform"] = os + "_" + arch;
    out["filename"] = text("filename");
    out["download_url"] = absolute(url, text("download_url"), "download_url");
    for (const char* name : {"shasums_url", "shasums_signature_url"}) {
        if (const Json* value = optional_member(doc, name, Json::value_t::string, "")) {
            out[name] = absolute(url, value->get<std::string>(), name);
        }
    }
    const std::string shasum = text("shasum");
    if (!proto::is_sha256_hex(shasum, proto::HexCase::any))
        bad("shasum \"" + shasum + "\" is not a SHA-256 in hex");
    out["shasum"] = shasum;
    // Lowercase, as Terraform writes zh: hashes (and lock files hold them).
    out["hashes"] = Json::array({"zh:" + proto::ascii_lowercase(shasum)});
    out["protocols"] = Json::array();
    if (const Json* p = optional_member(doc, "protocols", Json::value_t::array, "")) {
        out["protocols"] = string_array(*p, "protocols");
    }
    if (const Json* keys = optional_member(doc, "signing_keys", Json::value_t::object, ""))
        out["signing_keys"] = *keys;
    return out;
}

Json parse_mirror_version(std::string_view body, const std::string& url) {
    const Json doc = parse_object(body);
    const Json& archives = member(doc, "archives", Json::value_t::object, "");
    Json out = {{"archives", Json::object()}};
    Json invalid = Json::object();
    for (const auto& [platform, archive] : archives.items()) {
        const std::string where = "archives[\"" + platform + "\"]";
        if (!proto::is_platform(platform)) {
            invalid[platform] = "not a platform (OS_ARCH)";
            continue;
        }
        if (!archive.is_object())
            bad(where + " is a JSON " + archive.type_name() + ", not an object");
        const std::string& reference =
            member(archive, "url", Json::value_t::string, where).get_ref<const std::string&>();
        Json entry = {{"url", absolute(url, reference, where + ".url")}, {"hashes", Json::array()}};
        if (const Json* hashes = optional_member(archive, "hashes", Json::value_t::array, where)) {
            entry["hashes"] = string_array(*hashes, where + ".hashes");
        }
        out["archives"][platform] = std::move(entry);
    }
    if (!invalid.empty()) out["invalid"] = std::move(invalid);
    return out;
}

std::string resolve_module_location(const std::string& location, const std::string& endpoint) {
    const std::string_view l = location;
    if (l.substr(0, 1) == "/" || l.substr(0, 2) == "./" || l.substr(0, 3) == "../") {
        try {
            return http::resolve_url(endpoint, location);
        } catch (const http::UrlError& e) {
            bad("X-Terraform-Get \"" + location + "\": " + e.what());
        }
    }
    return location;
}

Json allowed_versions(const Json& body, const std::vector<proto::SemVer>& versions,
                      const proto::VersionConstraints& constraints) {
    Json out = Json::array();
    const Json& entries = body.at("versions");
    for (std::size_t i = 0; i < versions.size(); ++i) {
        if (constraints.allows(versions[i])) out.push_back(entries[i]);
    }
    return out;
}

std::optional<std::string> newest_release(const Json& body, const std::string& platform) {
    for (const Json& entry : body.at("versions")) {
        const proto::SemVer version = proto::parse_semver(entry.at("version").get<std::string>());
        if (version.is_prerelease()) continue;
        for (const Json& built : entry.at("platforms"))
            if (built.get_ref<const std::string&>() == platform) return version.to_string();
        return std::nullopt;
    }
    return std::nullopt;
}

}  // namespace hostkeeper::daemon::registry
