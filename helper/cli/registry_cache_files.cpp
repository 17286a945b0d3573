#include "helper/cli/registry_cache_files.hpp"

#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <stdexcept>

#include "helper/terraform_config/tool_locations.hpp"
#include "proto/file_io.hpp"
#include "proto/json.hpp"
#include "proto/secret.hpp"

namespace hostkeeper::helper::cli {
namespace fs = std::filesystem;
using proto::Json;

namespace {

// $NAME when absolute, else ~/FALLBACK (the XDG base directory rule).
fs::path xdg_home(const char* name, const char* fallback) {
    const char* xdg = std::getenv(name);
    if (xdg != nullptr && xdg[0] == '/') return xdg;
    return terraform_config::home_directory([](const char* n) { return std::getenv(n); }) /
           fallback;
}

fs::path config_home() {
    return xdg_home("XDG_CONFIG_HOME", ".config");
}

[[noreturn]] void malformed(const std::string& what) {
    throw proto::FileError(registry_cache_config_path().string() + ": " + what +
                           "; it is written by 'hostkeeper setup --registry-cache': move it "
                           "away and run that again");
}

std::vector<std::string> strings_of(const Json& json, const char* key) {
    const auto field = json.find(key);
    if (field == json.end() || !field->is_array())
        malformed(std::string("no \"") + key + "\" list");
    std::vector<std::string> values;
    for (const auto& item : *field) {
        if (!item.is_string()) malformed(std::string("\"") + key + "\" holds a non-string");
        values.push_back(item.get<std::string>());
    }
    return values;
}

}  // namespace

fs::path registry_cache_config_path() {
    return config_home() / "hostkeeper" / "registry-cache.json";
}

fs::path registry_cache_drop_in_path() {
    return config_home() / "systemd" / "user" / "hostkeeperd.socket.d" / "registry-cache.conf";
}

fs::path registry_cache_service_drop_in_path() {
    return config_home() / "systemd" / "user" / "hostkeeperd.service.d" / "registry-cache.conf";
}

std::vector<fs::path> daemon_write_dirs(const RegistryCacheConfig& config) {
    std::vector<fs::path> dirs;
    const auto add = [&dirs](const fs::path& dir) {
        if (std::find(dirs.begin(), dirs.end(), dir) == dirs.end()) dirs.push_back(dir);
    };
    for (const auto& tfrc : config.tfrc_files) add(tfrc.parent_path());
    add(xdg_home("XDG_CACHE_HOME", ".cache") / "hostkeeper");
    add(xdg_home("XDG_STATE_HOME", ".local/state") / "hostkeeper");
    return dirs;
}

std::string service_drop_in_text(const std::vector<fs::path>& dirs) {
    std::string text =
        "# Written by \"hostkeeper setup --registry-cache\"; \"hostkeeper setup --registry-cache "
        "--undo\" removes it.\n# hostkeeperd writes the registry cache's host blocks, learned "
        "hosts and archives here.\n[Service]\nReadWritePaths=";
    bool first = true;
    for (const auto& dir : dirs) {
        // A quoted word; in unit files '%' starts a specifier and '\\' an escape.
        std::string word = "\"-";
        for (const char c : dir.string()) {
            if (c == '%')
                word += "%%";
            else if (c == '\\' || c == '"')
                word.append(1, '\\').append(1, c);
            else
                word += c;
        }
        word += '"';
        text += (first ? "" : " ") + word;
        first = false;
    }
    return text + "\n";
}

std::optional<int> loopback_port(const std::string& listen) {
    const std::string prefix = "127.0.0.1:";
    if (listen.rfind(prefix, 0) != 0) return std::nullopt;
    const std::string digits = listen.substr(prefix.size());
    if (digits.empty() || digits.size() > 5) return std::nullopt;
    int port = 0;
    for (const char c : digits) {
        if (c < '0' || c > '9') return std::nullopt;
        port = port * 10 + (c - '0');
    }
    if (port < 1 || port > 65535) return std::nullopt;
    return port;
}

std::optional<RegistryCacheConfig> read_registry_cache_config() {
    auto text = proto::read_file_if_exists(registry_cache_config_path());
    if (!text) return std::nullopt;
    Json json;
    try {
        json = proto::parse_json(*text);
        proto::scrub(*text);  // an older file's capability
    } catch (const proto::JsonError& e) {
        proto::scrub(*text);
        malformed(std::string("not JSON (") + e.what() + ")");
    }
    if (!json.is_object()) malformed("not a JSON object");
    if (json.value("version", 0) != 1) malformed("\"version\" is not 1");
    RegistryCacheConfig config;
    if (json.contains("listen") && !json["listen"].is_string())
        malformed("\"listen\" is not a string");
    if (json.contains("capability") && !json["capability"].is_string())
        malformed("\"capability\" is not a string");
    config.old_capability = json.contains("capability");
    for (const auto& path : strings_of(json, "tfrc_files")) {
        if (path.empty() || path[0] != '/') malformed("\"tfrc_files\" holds a relative path");
        config.tfrc_files.emplace_back(path);
    }
    config.hosts = strings_of(json, "hosts");
    proto::scrub(json);
    return config;
}

std::string registry_cache_json(const RegistryCacheConfig& config) {
    Json tfrc = Json::array();
    for (const auto& path : config.tfrc_files) tfrc.push_back(path.string());
    const Json json{{"version", 1}, {"tfrc_files", tfrc}, {"hosts", config.hosts}};
    return json.dump(2) + "\n";
}

bool written_by_daemon(const fs::path& path) {
    std::optional<std::string> text;
    try {
        text = proto::read_file_if_exists(path);
    } catch (const proto::FileError&) {
        return false;
    }
    return text && text->rfind(kTfrcHeader, 0) == 0;
}

std::vector<int> tfrc_listener_ports(const std::string& text) {
    std::vector<int> ports;
    const std::string prefix = "http://127.0.0.1:";
    for (auto at = text.find(prefix); at != std::string::npos; at = text.find(prefix, at + 1)) {
        std::size_t end = at + prefix.size();
        while (end < text.size() && text[end] >= '0' && text[end] <= '9') ++end;
        const auto port =
            loopback_port("127.0.0.1:" + text.substr(at + prefix.size(), end - at - prefix.size()));
        if (port && std::find(ports.begin(), ports.end(), *port) == ports.end())
            ports.push_back(*port);
    }
    return ports;
}

}  // namespace hostkeeper::helper::cli
