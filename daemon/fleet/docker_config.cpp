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

// JSON read from `text` (JsonError, a std::runtime_error, when it does not
// read), scrubbed when dropped: it may hold secrets.
struct ScrubbedJson {
    explicit ScrubbedJson(std::string_view text) : json(proto::parse_json(text)) {}
    ScrubbedJson(const ScrubbedJson&) = delete;
    ScrubbedJson& operator=(const ScrubbedJson&) = delete;
    ScrubbedJson(ScrubbedJson&&) = delete;
    ScrubbedJson& operator=(ScrubbedJson&&) = delete;
    ~ScrubbedJson() { proto::scrub(json); }
    proto::Json json;
};

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
    const ScrubbedJson parsed(text);
    const proto::Json& config = parsed.json;
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

std::optional<std::string> read_docker_config() {
    const std::filesystem::path path = docker_config_path();
    try {
        return proto::read_file_if_exists(path, kMaxDockerConfig);
    } catch (const std::exception& e) {
        throw std::runtime_error(path.string() + ": " + e.what());
    }
}

std::optional<std::string> docker_helper(std::string_view text, const std::string& host) {
    const ScrubbedJson parsed(text);
    const proto::Json& config = parsed.json;
    if (!config.is_object()) throw std::runtime_error("it is not a JSON object");
    std::optional<std::string> name;
    const auto helpers = config.find("credHelpers");
    if (helpers != config.end()) {
        if (!helpers->is_object()) throw std::runtime_error("its credHelpers is not an object");
        const auto entry = helpers->find(host);
        if (entry != helpers->end()) {
            if (!entry->is_string())
                throw std::runtime_error("its credHelpers entry is not a name");
            name = entry->get<std::string>();
        }
    }
    const auto store = config.find("credsStore");
    if (!name && store != config.end()) {
        if (!store->is_string()) throw std::runtime_error("its credsStore is not a name");
        name = store->get<std::string>();
    }
    if (!name || name->empty()) return std::nullopt;
    if (name->size() > 64 ||
        name->find_first_not_of("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz"
                                "0123456789._-") != std::string::npos)
        throw std::runtime_error("it names a credential helper that is no program name");
    return name;
}

proto::Secret helper_credentials(std::string_view answer) {
    const ScrubbedJson read(answer);
    const proto::Json& parsed = read.json;
    const auto user = parsed.is_object() ? parsed.find("Username") : parsed.end();
    const auto secret = parsed.is_object() ? parsed.find("Secret") : parsed.end();
    if (!parsed.is_object() || user == parsed.end() || secret == parsed.end() ||
        !user->is_string() || !secret->is_string())
        throw std::runtime_error("its answer is not {\"Username\", \"Secret\"}");
    if (user->get_ref<const std::string&>() == "<token>")
        throw std::runtime_error("it answers an identity token, which is no registry password");
    std::string joined =
        user->get_ref<const std::string&>() + ":" + secret->get_ref<const std::string&>();
    return proto::Secret::adopt(joined);
}

}  // namespace hostkeeper::daemon::fleet
