#include "proto/git_credential.hpp"

#include <charconv>

#include "proto/error.hpp"
#include "proto/hostname.hpp"

namespace hostkeeper::proto {

namespace {

constexpr std::string_view kScheme = "https://";

bool has_control(std::string_view text) {
    for (const char c : text) {
        const auto byte = static_cast<unsigned char>(c);
        if (byte < 0x20 || byte == 0x7f) return true;
    }
    return false;
}

// A field's size and control characters, named in the message.
void check_text(std::string_view text, std::size_t limit, const char* what) {
    if (text.size() > limit)
        throw Error(ErrorCode::bad_request, std::string("the git ") + what + " is over " +
                                                std::to_string(limit) + " bytes");
    if (has_control(text))
        throw Error(ErrorCode::bad_request,
                    std::string("the git ") + what + " holds a control character");
}

bool unreserved(char c) {
    return (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '-' ||
           c == '.' || c == '_' || c == '~';
}

int hex_value(char c) {
    if (c >= '0' && c <= '9') return c - '0';
    if (c >= 'A' && c <= 'F') return c - 'A' + 10;
    return -1;  // lower case is not what percent_encode_username() writes
}

std::optional<std::string> percent_decode(std::string_view text) {
    std::string out;
    out.reserve(text.size());
    for (std::size_t i = 0; i < text.size(); ++i) {
        if (text[i] != '%') {
            out += text[i];
            continue;
        }
        if (i + 2 >= text.size()) return std::nullopt;
        const int high = hex_value(text[i + 1]);
        const int low = hex_value(text[i + 2]);
        if (high < 0 || low < 0) return std::nullopt;
        out += static_cast<char>(high * 16 + low);
        i += 2;
    }
    return out;
}

}  // namespace

void check_git_protocol(std::string_view protocol) {
    if (protocol != kGitProtocol)
        throw Error(ErrorCode::bad_request, "git credentials are only kept for https");
}

std::string git_host(std::string_view host) {
    if (host.empty()) throw Error(ErrorCode::bad_host, "no git host");
    return normalize_hostname(host);
}

std::string git_path(std::string_view path) {
    check_text(path, kMaxGitPathSize, "path");
    const std::size_t first = path.find_first_not_of('/');
    return first == std::string_view::npos ? std::string() : std::string(path.substr(first));
}

std::string git_username(std::string_view username) {
    check_text(username, kMaxGitUsernameSize, "username");
    return std::string(username);
}

void check_git_password(std::string_view password) {
    if (password.size() > kMaxGitPasswordSize)
        throw Error(ErrorCode::bad_request,
                    "the git password is over " + std::to_string(kMaxGitPasswordSize) + " bytes");
    if (password.find_first_of(std::string_view("\0\n\r", 3)) != std::string_view::npos)
        throw Error(ErrorCode::bad_request,
                    "the git password holds a NUL, a carriage return or a line end");
}

std::optional<std::uint64_t> parse_git_expiry(std::string_view text) {
    std::uint64_t value = 0;
    const char* end = text.data() + text.size();
    const auto [stop, error] = std::from_chars(text.data(), end, value);
    if (text.empty() || error != std::errc() || stop != end) return std::nullopt;
    return value;
}

std::string percent_encode_username(std::string_view username) {
    static constexpr std::string_view kHex = "0123456789ABCDEF";
    std::string out;
    out.reserve(username.size());
    for (const char c : username) {
        if (unreserved(c)) {
            out += c;
            continue;
        }
        const auto byte = static_cast<unsigned char>(c);
        out += '%';
        out += kHex[byte >> 4U];
        out += kHex[byte & 0xFU];
    }
    return out;
}

std::string git_item_url(const GitItemKey& key) {
    std::string url(kScheme);
    url += key.host;
    if (!key.path.empty()) url += "/" + key.path;
    return url;
}

std::string git_item_key(const GitItemKey& key) {
    std::string url(kScheme);
    if (!key.username.empty()) url += percent_encode_username(key.username) + "@";
    url += key.host;
    if (!key.path.empty()) url += "/" + key.path;
    return url;
}

std::optional<GitItemKey> parse_git_item_key(std::string_view key) {
    if (key.substr(0, kScheme.size()) != kScheme) return std::nullopt;
    std::string_view rest = key.substr(kScheme.size());
    const std::size_t slash = rest.find('/');
    std::string_view authority = rest.substr(0, slash);
    GitItemKey out;
    if (slash != std::string_view::npos) out.path = std::string(rest.substr(slash + 1));
    if (const std::size_t at = authority.find('@'); at != std::string_view::npos) {
        std::optional<std::string> username = percent_decode(authority.substr(0, at));
        if (!username) return std::nullopt;
        out.username = std::move(*username);
        authority.remove_prefix(at + 1);
    }
    out.host = std::string(authority);
    try {
        if (git_host(out.host) != out.host || git_path(out.path) != out.path ||
            git_username(out.username) != out.username)
            return std::nullopt;
    } catch (const Error&) {
        return std::nullopt;
    }
    if (git_item_key(out) != key) return std::nullopt;
    return out;
}

}  // namespace hostkeeper::proto
