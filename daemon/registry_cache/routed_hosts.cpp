#include "daemon/registry_cache/routed_hosts.hpp"

#include <sys/stat.h>

#include <stdexcept>

#include "proto/file_io.hpp"

namespace hostkeeper::daemon::registry_cache {
namespace fs = std::filesystem;
using proto::Json;

namespace {

constexpr std::size_t kMaxStateFile = std::size_t{4} * 1024 * 1024;

// An HCL string literal, or nullopt for text HCL would read as something else.
std::optional<std::string> hcl_string(const std::string& text) {
    if (text.find("${") != std::string::npos || text.find("%{") != std::string::npos)
        return std::nullopt;
    std::string out = "\"";
    for (const char c : text) {
        if (static_cast<unsigned char>(c) < 0x20 || c == 0x7f) return std::nullopt;
        if (c == '"' || c == '\\') out.push_back('\\');
        out.push_back(c);
    }
    out.push_back('"');
    return out;
}

// A JSON value as an HCL expression (strings, numbers, booleans, lists and
// objects of them), or nullopt when it has something HCL cannot say plainly.
std::optional<std::string> hcl_value(const Json& value, const std::string& indent) {
    switch (value.type()) {
        case Json::value_t::string:
            return hcl_string(value.get_ref<const std::string&>());
        case Json::value_t::boolean:
            return value.get<bool>() ? "true" : "false";
        case Json::value_t::number_integer:
        case Json::value_t::number_unsigned:
            return value.dump();
        case Json::value_t::array: {
            std::string out = "[";
            for (const Json& item : value) {
                auto text = hcl_value(item, indent);
                if (!text) return std::nullopt;
                out += (out.size() > 1 ? ", " : "") + *text;
            }
            return out + "]";
        }
        case Json::value_t::object: {
            std::string out = "{\n";
            for (const auto& [key, item] : value.items()) {
                auto name = hcl_string(key);
                auto text = hcl_value(item, indent + "  ");
                if (!name || !text) return std::nullopt;
                out += indent + "  " + *name + " = " + *text + "\n";
            }
            return out + indent + "}";
        }
        default:
            return std::nullopt;
    }
}

// BASE + "v1/HOST/SERVICE/".
std::string listener_url(const std::string& base_url, const std::string& host,
                         const char* service) {
    std::string url = base_url;
    url.append("v1/").append(host).append("/").append(service).append("/");
    return url;
}

bool is_string_service(const Json& services, const char* id) {
    const auto it = services.find(id);
    return it != services.end() && it->is_string();
}

}  // namespace

bool offers_registry(const Json& services) {
    return services.is_object() && (is_string_service(services, "modules.v1") ||
                                    is_string_service(services, "providers.v1"));
}

std::string render_tfrc(const std::map<std::string, RoutedHost>& hosts, const std::string& base_url,
                        bool suspended) {
    std::string out = std::string(kTfrcHeader) +
                      " (hostkeeper setup --registry-cache).\n"
                      "# Do not edit: hostkeeperd rewrites it. Turn the cache off with\n"
                      "#   hostkeeper setup --registry-cache --undo\n";
    if (suspended) {
        return out +
               "#\n# Suspended: the registry port (hostkeeper-port.socket) cannot be used here\n"
               "# (hostkeeper doctor says why); Terraform and OpenTofu use the registries\n"
               "# directly until it can.\n";
    }
    for (const auto& [host, entry] : hosts) {
        if (!entry.reason.empty() || !entry.services || !offers_registry(*entry.services)) continue;
        const auto name = hcl_string(host);
        if (!name) continue;
        out.append("\nhost ").append(*name).append(" {\n  services = {\n");
        for (const auto& [id, value] : entry.services->items()) {
            std::optional<std::string> text;
            if (id == "modules.v1" && value.is_string()) {
                text = hcl_string(listener_url(base_url, host, "modules"));
            } else if (id == "providers.v1" && value.is_string()) {
                text = hcl_string(listener_url(base_url, host, "providers"));
            } else {
                text = hcl_value(value, "    ");
            }
            const auto key = hcl_string(id);
            if (!text || !key) continue;  // a service HCL cannot carry as given: left out
            out += "    " + *key + " = " + *text + "\n";
        }
        out += "  }\n}\n";
    }
    return out;
}

RoutedHosts::RoutedHosts(const std::vector<std::string>& named, fs::path state_file,
                         std::vector<fs::path> tfrc_files, std::string base_url)
    : state_file_(std::move(state_file)),
      tfrc_files_(std::move(tfrc_files)),
      base_url_(std::move(base_url)) {
    for (const std::string& host : named) {
        RoutedHost& entry = hosts_[host];
        entry.named = true;
        entry.reason = "not discovered yet";
    }
}

std::string RoutedHosts::load() {
    std::optional<std::string> text;
    Json doc;
    try {
        text = proto::read_file_if_exists(state_file_, kMaxStateFile);
        if (!text) return {};
        doc = proto::parse_json(*text);
    } catch (const std::exception& e) {
        return state_file_.string() + ": " + e.what();
    }
    const auto it = doc.find("hosts");
    if (!doc.is_object() || it == doc.end() || !it->is_object())
        return state_file_.string() + ": no \"hosts\" object";
    for (const auto& [host, saved] : it->items()) {
        if (!saved.is_object()) continue;
        const auto services = saved.find("services");
        const bool learned = saved.value("learned", false);
        const bool named = hosts_.count(host) != 0 && hosts_.at(host).named;
        if (!named && !learned) continue;  // a named host setup no longer names
        if (services == saved.end() || !services->is_object()) continue;
        RoutedHost& entry = hosts_[host];
        entry.services = *services;
        entry.reason =
            offers_registry(*services) ? "" : "offers neither modules.v1 nor providers.v1";
    }
    return {};
}

bool RoutedHosts::routed(const std::string& host) const {
    const auto it = hosts_.find(host);
    return it != hosts_.end() && it->second.reason.empty();
}

bool RoutedHosts::discovered(const std::string& host, const Json& services) {
    const bool was_routed = routed(host);  // before a new entry (reason "") is made
    RoutedHost& entry = hosts_[host];
    const bool same = entry.services && *entry.services == services;
    entry.services = services;
    entry.reason = offers_registry(services) ? "" : "offers neither modules.v1 nor providers.v1";
    const bool now_routed = entry.reason.empty();
    return was_routed != now_routed || (now_routed && !same);
}

void RoutedHosts::failed(const std::string& host, const std::string& why) {
    RoutedHost& entry = hosts_[host];
    if (entry.reason.empty() && entry.services) return;  // routed: an outage changes nothing
    entry.reason = "discovery failed: " + why;
}

void RoutedHosts::write() const {
    Json state = {{"version", 1}, {"hosts", Json::object()}};
    for (const auto& [host, entry] : hosts_) {
        if (!entry.services) continue;
        state["hosts"][host] = {{"learned", !entry.named}, {"services", *entry.services}};
    }
    fs::create_directories(state_file_.parent_path());
    proto::write_file_atomically(state_file_, state.dump(2) + "\n", 0600);
    const std::string text = render_tfrc(hosts_, base_url_, suspended_);
    for (const fs::path& file : tfrc_files_) {
        std::error_code ignored;
        fs::create_directories(file.parent_path(), ignored);
        // Unchanged files keep their mtime: it says since when they read as they do.
        std::optional<std::string> current;
        try {
            current = proto::read_file_if_exists(file);
        } catch (const proto::FileError&) {
        }
        if (current == text) continue;
        proto::write_file_atomically(file, text, 0600);
    }
}

Json RoutedHosts::status() const {
    Json out = Json::array();
    for (const auto& [host, entry] : hosts_) {
        Json services = Json::array();
        if (entry.services) {
            for (const auto& [id, value] : entry.services->items()) services.push_back(id);
        }
        out.push_back({{"host", host},
                       {"source", entry.named ? "named" : "learned"},
                       {"routed", entry.reason.empty()},
                       {"services", std::move(services)},
                       {"reason", entry.reason.empty() ? Json(nullptr) : Json(entry.reason)}});
    }
    return out;
}

}  // namespace hostkeeper::daemon::registry_cache
