#include "daemon/registry_cache/cache_config.hpp"

#include <sys/stat.h>
#include <unistd.h>

#include <cstdlib>
#include <stdexcept>

#include "proto/file_io.hpp"
#include "proto/hostname.hpp"
#include "proto/json.hpp"
#include "proto/secret.hpp"

namespace hostkeeper::daemon::registry_cache {
namespace fs = std::filesystem;
using proto::Json;

namespace {

[[noreturn]] void bad(const std::string& what) {
    throw std::runtime_error("registry-cache.json: " + what);
}

const Json& member(const Json& doc, const char* name, Json::value_t type, const char* type_name) {
    const auto it = doc.find(name);
    if (it == doc.end()) bad(std::string("\"") + name + "\" is missing");
    if (it->type() != type) bad(std::string("\"") + name + "\" must be " + type_name);
    return *it;
}

}  // namespace

std::string listen_address(std::uint16_t port) {
    return "127.0.0.1:" + std::to_string(port);
}

std::string base_url(std::uint16_t port) {
    return "http://" + listen_address(port) + "/";
}

CacheConfig parse_cache_config(std::string_view text) {
    Json doc;
    try {
        doc = proto::parse_json(text);
    } catch (const proto::JsonError& e) {
        bad(std::string("not JSON: ") + e.what());
    }
    if (!doc.is_object()) bad("must be a JSON object");
    for (const auto& [key, value] : doc.items()) {
        if (key != "version" && key != "listen" && key != "capability" && key != "tfrc_files" &&
            key != "hosts") {
            bad("unknown key \"" + key + "\"");
        }
    }
    const Json& version = member(doc, "version", Json::value_t::number_unsigned, "1");
    if (version.get<std::uint64_t>() != 1) bad("\"version\" must be 1");

    CacheConfig config;
    // Files written before the registry port name the port they chose; the
    // registry port replaces it.
    if (doc.contains("listen") && !doc["listen"].is_string()) bad("\"listen\" must be a string");

    // Files written when every listener URL began with a capability still
    // name it; the URLs no longer carry one, so it is read and dropped.
    if (doc.contains("capability") && !doc["capability"].is_string())
        bad("\"capability\" must be a string");

    for (const Json& file : member(doc, "tfrc_files", Json::value_t::array, "an array")) {
        if (!file.is_string()) bad("\"tfrc_files\" must hold strings");
        const fs::path path(file.get<std::string>());
        if (!path.is_absolute() || path.filename().empty())
            bad("\"tfrc_files\" must hold absolute file paths");
        config.tfrc_files.push_back(path);
    }
    for (const Json& host : member(doc, "hosts", Json::value_t::array, "an array")) {
        if (!host.is_string()) bad("\"hosts\" must hold strings");
        try {
            const std::string normalized = proto::normalize_hostname(host.get<std::string>());
            bool seen = false;
            for (const std::string& h : config.hosts) seen = seen || h == normalized;
            if (!seen) config.hosts.push_back(normalized);
        } catch (const std::exception& e) {
            bad("\"hosts\": " + std::string(e.what()));
        }
    }
    proto::scrub(doc);  // an old file's capability
    return config;
}

fs::path default_cache_config_path() {
    return proto::xdg_base_dir("XDG_CONFIG_HOME", ".config") / "hostkeeper" / "registry-cache.json";
}

fs::path default_state_path() {
    return proto::xdg_base_dir("XDG_STATE_HOME", ".local/state") / "hostkeeper" /
           "registry-cache-hosts.json";
}

std::optional<CacheConfig> load_cache_config(const fs::path& path) {
    struct stat st {};
    if (::lstat(path.c_str(), &st) != 0) {
        if (errno == ENOENT) return std::nullopt;
        bad(path.string() + ": cannot be read");
    }
    // It names the files the daemon rewrites: the owner's, and nobody else's.
    if (!S_ISREG(st.st_mode)) bad(path.string() + " is not a regular file");
    if (st.st_uid != ::geteuid()) bad(path.string() + " is not owned by this user");
    if ((st.st_mode & 077) != 0) bad(path.string() + " is readable by others: chmod 600 it");
    std::optional<std::string> text;
    try {
        text = proto::read_file_if_exists(path, kMaxCacheConfig);
    } catch (const proto::FileError& e) {
        bad(e.what());
    }
    if (!text) return std::nullopt;
    CacheConfig config = parse_cache_config(*text);
    proto::scrub(*text);
    config.origin = path;
    return config;
}

}  // namespace hostkeeper::daemon::registry_cache
