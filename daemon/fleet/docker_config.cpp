#include "daemon/fleet/docker_config.hpp"

#include <openssl/evp.h>

#include <cstdlib>
#include <stdexcept>
#include <vector>

#include "proto/file_io.hpp"
#include "proto/json.hpp"

namespace hostkeeper::daemon::fleet {

namespace {

constexpr std::size_t kMaxDockerConfig = std::size_t{1} << 20;
constexpr std::size_t kMaxAuth = 8192;

// The base64 `text` decoded; throws std::runtime_error when it is not base64.
proto::Secret decode_base64(const std::string& text) {
    if (text.empty() || text.size() > kMaxAuth || text.size() % 4 != 0)
        throw std::runtime_error("its auth is not base64 of USER:PASSWORD");
    std::string out(text.size() / 4 * 3, '\0');
    const int length = EVP_DecodeBlock(reinterpret_cast<unsigned char*>(out.data()),
                                       reinterpret_cast<const unsigned char*>(text.data()),
                                       static_cast<int>(text.size()));
    if (length < 0) {
        proto::scrub(out);
        throw std::runtime_error("its auth is not base64 of USER:PASSWORD");
    }
    // EVP_DecodeBlock counts the padding's zero bytes in.
    std::size_t size = static_cast<std::size_t>(length);
    for (std::size_t i = text.size(); i > 0 && text[i - 1] == '=' && size > 0; --i) --size;
    out.resize(size);
    return proto::Secret::adopt(out);
}

const proto::Json* entry_for(const proto::Json& auths, const std::string& host) {
    for (const std::string& name : {host, "https://" + host, "https://" + host + "/",
                                    "https://" + host + "/v1/", "https://" + host + "/v2/"}) {
        const auto it = auths.find(name);
        if (it != auths.end() && it->is_object()) return &*it;
    }
    return nullptr;
}

}  // namespace

std::filesystem::path docker_config_path() {
    if (const char* dir = std::getenv("DOCKER_CONFIG"); dir != nullptr && dir[0] != '\0')
        return std::filesystem::path(dir) / "config.json";
    const char* home = std::getenv("HOME");
    return std::filesystem::path(home != nullptr ? home : "") / ".docker" / "config.json";
}

std::optional<proto::Secret> docker_auth(std::string_view text, const std::string& host) {
    proto::Json config = proto::parse_json(text);  // JsonError: std::runtime_error
    struct Scrubbed {
        proto::Json& json;
        ~Scrubbed() { proto::scrub(json); }
    } scrubbed{config};
    if (!config.is_object()) throw std::runtime_error("it is not a JSON object");
    const auto auths = config.find("auths");
    if (auths == config.end()) return std::nullopt;
    if (!auths->is_object()) throw std::runtime_error("its auths is not an object");
    const proto::Json* entry = entry_for(*auths, host);
    if (entry == nullptr) return std::nullopt;
    const auto auth = entry->find("auth");
    if (auth != entry->end() && auth->is_string() && !auth->get_ref<const std::string&>().empty()) {
        proto::Secret decoded = decode_base64(auth->get_ref<const std::string&>());
        if (decoded.view().find(':') == std::string_view::npos)
            throw std::runtime_error("its auth for " + host + " is not USER:PASSWORD");
        return decoded;
    }
    const auto user = entry->find("username");
    const auto password = entry->find("password");
    if (user != entry->end() && password != entry->end() && user->is_string() &&
        password->is_string()) {
        std::string joined =
            user->get_ref<const std::string&>() + ":" + password->get_ref<const std::string&>();
        return proto::Secret::adopt(joined);
    }
    return std::nullopt;
}

std::optional<proto::Secret> docker_config_auth(const std::string& host, std::string& problem) {
    problem.clear();
    const std::filesystem::path path = docker_config_path();
    try {
        std::optional<std::string> text = proto::read_file_if_exists(path, kMaxDockerConfig);
        if (!text) return std::nullopt;
        struct Scrubbed {
            std::string& text;
            ~Scrubbed() { proto::scrub(text); }
        } scrubbed{*text};
        return docker_auth(*text, host);
    } catch (const std::exception& e) {
        problem = path.string() + ": " + e.what();
        return std::nullopt;
    }
}

}  // namespace hostkeeper::daemon::fleet
