#include "proto/registry_cache_file.hpp"

#include <algorithm>

#include "proto/hostname.hpp"
#include "proto/json.hpp"
#include "proto/secret.hpp"

namespace hostkeeper::proto {
namespace fs = std::filesystem;

namespace {

[[noreturn]] void bad(const std::string& what) {
    throw RegistryCacheFileError(what);
}

const Json& member(const Json& doc, const char* name, Json::value_t type, const char* type_name) {
    const auto it = doc.find(name);
    if (it == doc.end()) bad(std::string("\"") + name + "\" is missing");
    if (it->type() != type) bad(std::string("\"") + name + "\" must be " + type_name);
    return *it;
}

void check_keys(const Json& doc) {
    for (const auto& [key, value] : doc.items()) {
        if (key != "version" && key != "listen" && key != "capability" && key != "tfrc_files" &&
            key != "hosts") {
            bad("unknown key \"" + key + "\"");
        }
    }
    const Json& version = member(doc, "version", Json::value_t::number_unsigned, "1");
    if (version.get<std::uint64_t>() != 1) bad("\"version\" must be 1");
    if (doc.contains("listen") && !doc["listen"].is_string()) bad("\"listen\" must be a string");
    if (doc.contains("capability") && !doc["capability"].is_string())
        bad("\"capability\" must be a string");
}

std::vector<std::string> hosts_of(const Json& doc) {
    std::vector<std::string> hosts;
    for (const Json& host : member(doc, "hosts", Json::value_t::array, "an array")) {
        if (!host.is_string()) bad("\"hosts\" must hold strings");
        try {
            std::string normalized = normalize_hostname(host.get<std::string>());
            if (std::find(hosts.begin(), hosts.end(), normalized) == hosts.end())
                hosts.push_back(std::move(normalized));
        } catch (const std::exception& e) {
            bad("\"hosts\": " + std::string(e.what()));
        }
    }
    return hosts;
}

}  // namespace

RegistryCacheFile parse_registry_cache_file(std::string_view text) {
    Json doc;
    try {
        doc = parse_json(text);
    } catch (const JsonError& e) {
        bad(std::string("not JSON: ") + e.what());
    }
    if (!doc.is_object()) bad("must be a JSON object");
    struct Scrub {
        Json& doc;
        ~Scrub() { scrub(doc); }  // an older file's capability
    } scrub_doc{doc};
    check_keys(doc);
    RegistryCacheFile file;
    file.old_capability = doc.contains("capability");
    for (const Json& tfrc : member(doc, "tfrc_files", Json::value_t::array, "an array")) {
        if (!tfrc.is_string()) bad("\"tfrc_files\" must hold strings");
        const fs::path path(tfrc.get<std::string>());
        if (!path.is_absolute() || path.filename().empty())
            bad("\"tfrc_files\" must hold absolute file paths");
        file.tfrc_files.push_back(path);
    }
    file.hosts = hosts_of(doc);
    return file;
}

std::string registry_cache_file_text(const RegistryCacheFile& file) {
    Json tfrc = Json::array();
    for (const auto& path : file.tfrc_files) tfrc.push_back(path.string());
    const Json json{{"version", 1}, {"tfrc_files", tfrc}, {"hosts", file.hosts}};
    return json.dump(2) + "\n";
}

std::string listen_address(std::uint16_t port) {
    return "127.0.0.1:" + std::to_string(port);
}

std::string base_url(std::uint16_t port) {
    return "http://" + listen_address(port) + "/";
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

bool is_daemon_tfrc(std::string_view text) {
    return text.substr(0, std::string_view(kTfrcHeader).size()) == kTfrcHeader;
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

}  // namespace hostkeeper::proto
