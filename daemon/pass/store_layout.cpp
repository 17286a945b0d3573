#include "daemon/pass/store_layout.hpp"

#include <openssl/evp.h>

#include <algorithm>
#include <cstdlib>

#include "proto/error.hpp"
#include "proto/file_io.hpp"
#include "proto/hostname.hpp"
#include "proto/messages.hpp"

namespace hostkeeper::daemon::pass {
namespace fs = std::filesystem;

namespace {

constexpr std::string_view kSuffix = ".gpg";
constexpr std::string_view kBlanks = " \t\r\v\f";

std::string_view trim(std::string_view text) {
    const auto first = text.find_first_not_of(kBlanks);
    if (first == std::string_view::npos) return {};
    const auto last = text.find_last_not_of(kBlanks);
    return text.substr(first, last - first + 1);
}

constexpr std::size_t kMaxFileName = 255;  // NAME_MAX of Linux file systems

}  // namespace

std::string docker_entry_name(std::string_view server) {
    // OpenSSL's base64, made URL- and file-safe (no '/') and unpadded.
    std::string encoded(4 * ((server.size() + 2) / 3) + 1, '\0');
    const int length = EVP_EncodeBlock(reinterpret_cast<unsigned char*>(encoded.data()),
                                       reinterpret_cast<const unsigned char*>(server.data()),
                                       static_cast<int>(server.size()));
    encoded.resize(static_cast<std::size_t>(length));
    while (!encoded.empty() && encoded.back() == '=') encoded.pop_back();
    std::replace(encoded.begin(), encoded.end(), '+', '-');
    std::replace(encoded.begin(), encoded.end(), '/', '_');
    if (encoded.size() + kSuffix.size() > kMaxFileName) {
        throw proto::Error(proto::ErrorCode::bad_request,
                           "the server URL is too long for a pass entry name (at most 188 bytes)");
    }
    return std::string(kEntryFolder) + "/" + std::string(kDockerFolder) + "/" + encoded;
}

std::optional<std::string> server_of_docker_entry_file(std::string_view file_name) {
    if (file_name.size() <= kSuffix.size() ||
        file_name.substr(file_name.size() - kSuffix.size()) != kSuffix)
        return std::nullopt;
    std::string text(file_name.substr(0, file_name.size() - kSuffix.size()));
    if (text.find_first_of("+/=") != std::string::npos) return std::nullopt;
    std::replace(text.begin(), text.end(), '-', '+');
    std::replace(text.begin(), text.end(), '_', '/');
    const std::size_t padding = (4 - text.size() % 4) % 4;
    if (padding == 3) return std::nullopt;
    text.append(padding, '=');
    std::string decoded(text.size() / 4 * 3 + 1, '\0');
    const int length = EVP_DecodeBlock(reinterpret_cast<unsigned char*>(decoded.data()),
                                       reinterpret_cast<const unsigned char*>(text.data()),
                                       static_cast<int>(text.size()));
    if (length < 0) return std::nullopt;
    // EVP_DecodeBlock counts the padding's bytes as zeros.
    decoded.resize(static_cast<std::size_t>(length) - padding);
    try {
        // Only names hostkeeper itself writes: the key of a valid server URL, encoded back alike.
        if (proto::docker_server_key(decoded) != decoded ||
            docker_entry_name(decoded) !=
                std::string(kEntryFolder) + "/" + std::string(kDockerFolder) + "/" +
                    std::string(file_name.substr(0, file_name.size() - kSuffix.size())))
            return std::nullopt;
    } catch (const proto::Error&) {
        return std::nullopt;
    }
    return decoded;
}

fs::path resolve_store_dir(const std::optional<fs::path>& configured) {
    if (configured && !configured->empty()) return fs::absolute(*configured);
    const char* env = std::getenv("PASSWORD_STORE_DIR");
    if (env != nullptr && *env != '\0') return fs::absolute(env);
    const char* home = std::getenv("HOME");
    return fs::path(home != nullptr && *home != '\0' ? home : "/") / ".password-store";
}

std::string entry_name(std::string_view host) {
    std::string name(host);
    const auto colon = name.rfind(':');
    if (colon != std::string::npos) name[colon] = '_';
    return std::string(kEntryFolder) + "/" + name;
}

std::optional<std::string> host_of_entry_file(std::string_view file_name) {
    if (file_name.size() <= kSuffix.size() ||
        file_name.substr(file_name.size() - kSuffix.size()) != kSuffix)
        return std::nullopt;
    std::string host(file_name.substr(0, file_name.size() - kSuffix.size()));
    // hostkeeper writes a port after '_': "h:1.gpg" is not one of its names.
    if (host.find(':') != std::string::npos) return std::nullopt;
    const auto underscore = host.rfind('_');
    if (underscore != std::string::npos) host[underscore] = ':';
    try {
        // Only names hostkeeper itself would write: the normalized form.
        if (proto::normalize_hostname(host) != host) return std::nullopt;
    } catch (const std::exception&) {
        return std::nullopt;
    }
    return host;
}

std::vector<std::string> parse_gpg_ids(std::string_view text) {
    std::vector<std::string> ids;
    while (!text.empty()) {
        const auto newline = text.find('\n');
        std::string_view line = text.substr(0, newline);
        text = newline == std::string_view::npos ? std::string_view{} : text.substr(newline + 1);
        line = line.substr(0, line.find('#'));
        line = trim(line);
        if (!line.empty()) ids.emplace_back(line);
    }
    return ids;
}

std::vector<std::string> parse_store_key(std::string_view text) {
    std::vector<std::string> ids;
    while (!text.empty()) {
        const auto start = text.find_first_not_of(" \t\n");
        if (start == std::string_view::npos) break;
        text = text.substr(start);
        const auto end = text.find_first_of(" \t\n");
        ids.emplace_back(text.substr(0, end));
        text = end == std::string_view::npos ? std::string_view{} : text.substr(end);
    }
    return ids;
}

std::optional<fs::path> gpg_id_file_for(const fs::path& store, const fs::path& folder) {
    const fs::path root = store.lexically_normal();
    fs::path current = folder.lexically_normal();
    std::error_code ec;
    while (true) {
        fs::path candidate = current / ".gpg-id";
        if (fs::is_regular_file(candidate, ec)) return candidate;
        if (current == root || !current.has_parent_path() || current.parent_path() == current)
            break;
        const fs::path relative = current.lexically_relative(root);
        if (relative.empty() || *relative.begin() == "..") break;
        current = current.parent_path();
    }
    return std::nullopt;
}

proto::Secret entry_text(std::string_view plaintext) {
    while (!plaintext.empty() && (plaintext.back() == '\n' || plaintext.back() == '\r' ||
                                  plaintext.back() == ' ' || plaintext.back() == '\t'))
        plaintext.remove_suffix(1);
    const auto first = plaintext.find_first_not_of(" \t\r\n");
    const bool object = first != std::string_view::npos && plaintext[first] == '{';
    if (!object) {
        const auto newline = plaintext.find('\n');
        plaintext = plaintext.substr(0, newline);
        while (!plaintext.empty() && plaintext.back() == '\r') plaintext.remove_suffix(1);
    }
    return proto::Secret(plaintext);
}

bool is_initialized(const fs::path& store) {
    return gpg_id_file_for(store, store / kEntryFolder).has_value();
}

}  // namespace hostkeeper::daemon::pass
