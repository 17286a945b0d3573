#include "helper/git_credential_helper/git_credentials.hpp"

#include <algorithm>
#include <charconv>
#include <system_error>

#include "proto/error.hpp"

namespace hostkeeper::helper::git_credential_helper {
using proto::Error;
using proto::ErrorCode;

namespace {

int hex_value(char c) {
    if (c >= '0' && c <= '9') return c - '0';
    if (c >= 'a' && c <= 'f') return c - 'a' + 10;
    if (c >= 'A' && c <= 'F') return c - 'A' + 10;
    return -1;
}

// git's url_decode_mem(): "%XX" is the byte XX; a "%" not followed by two
// hex digits stays as it is. A line break or NUL in the result is refused,
// as git refuses it (check_url_component()).
std::string url_decode(std::string_view text, std::string_view component) {
    std::string out;
    out.reserve(text.size());
    for (std::size_t i = 0; i < text.size(); ++i) {
        if (text[i] == '%' && i + 2 < text.size() && hex_value(text[i + 1]) >= 0 &&
            hex_value(text[i + 2]) >= 0) {
            out += static_cast<char>(hex_value(text[i + 1]) * 16 + hex_value(text[i + 2]));
            i += 2;
        } else {
            out += text[i];
        }
    }
    if (out.find_first_of(std::string_view("\n\0", 2)) != std::string::npos) {
        proto::scrub(out);
        throw Error(ErrorCode::bad_request,
                    "the url= value holds a line break or NUL in its " + std::string(component));
    }
    return out;
}

std::uint64_t parse_expiry(std::string_view value) {
    std::uint64_t seconds = 0;
    const auto [end, error] = std::from_chars(value.data(), value.data() + value.size(), seconds);
    if (value.empty() || error != std::errc() || end != value.data() + value.size()) {
        throw Error(ErrorCode::bad_request,
                    "password_expiry_utc is not a decimal number of seconds since 1970");
    }
    return seconds;
}

// One "key=value" line into `credential`.
void apply_line(GitCredential& credential, std::string_view key, std::string_view value) {
    if (key == "protocol") {
        credential.protocol = std::string(value);
    } else if (key == "host") {
        credential.host = std::string(value);
    } else if (key == "path") {
        credential.path = std::string(value);
    } else if (key == "username") {
        credential.username = std::string(value);
    } else if (key == "password") {
        credential.password = proto::Secret(value);
    } else if (key == "password_expiry_utc") {
        credential.password_expiry_utc = parse_expiry(value);
    } else if (key == "oauth_refresh_token") {
        credential.oauth_refresh_token = proto::Secret(value);
    } else if (key == "url") {
        apply_url(credential, value);
    }
    // Anything else (capability[], wwwauth[], authtype, credential,
    // ephemeral, state[], continue, quit, keys of later gits) is not ours.
}

// Appends "key=value\n", refusing what would break the protocol's lines
// (git takes a "\r" before "\n" for part of the line end).
void append_line(std::string& out, std::string_view key, std::string_view value) {
    if (value.find_first_of(std::string_view("\n\r\0", 3)) != std::string_view::npos) {
        throw Error(ErrorCode::internal, "the stored " + std::string(key) +
                                             " holds a line break or NUL, which git's "
                                             "credential protocol cannot carry");
    }
    out.append(key);
    out += '=';
    out.append(value);
    out += '\n';
}

}  // namespace

void apply_url(GitCredential& credential, std::string_view url) {
    credential = GitCredential{};
    const std::size_t scheme_end = url.find("://");
    if (scheme_end == std::string_view::npos || scheme_end == 0) {
        throw Error(ErrorCode::bad_request, "the url= value has no scheme (PROTOCOL://)");
    }
    const std::string_view rest = url.substr(scheme_end + 3);
    const std::size_t at = rest.find('@');
    const std::size_t colon = rest.find(':');
    const std::size_t slash = std::min(rest.find_first_of("/?#"), rest.size());
    std::size_t host_start = 0;
    if (at != std::string_view::npos && at < slash) {
        if (colon == std::string_view::npos || at <= colon) {
            credential.username = url_decode(rest.substr(0, at), "user name");
        } else {
            credential.username = url_decode(rest.substr(0, colon), "user name");
            std::string password = url_decode(rest.substr(colon + 1, at - colon - 1), "password");
            credential.password = proto::Secret::adopt(password);
        }
        host_start = at + 1;
    }
    credential.protocol = std::string(url.substr(0, scheme_end));
    credential.host = url_decode(rest.substr(host_start, slash - host_start), "host");
    std::string_view path = rest.substr(slash);
    while (!path.empty() && path.front() == '/') path.remove_prefix(1);
    std::string decoded = url_decode(path, "path");
    while (decoded.size() > 1 && decoded.back() == '/') decoded.pop_back();
    credential.path = std::move(decoded);
}

GitCredential parse_credential(std::string_view input) {
    if (input.find('\0') != std::string_view::npos) {
        throw Error(ErrorCode::bad_request, "the credential on standard input holds a NUL byte");
    }
    GitCredential credential;
    std::size_t number = 0;
    while (!input.empty()) {
        const std::size_t end = input.find('\n');
        std::string_view line = input.substr(0, end);
        input.remove_prefix(end == std::string_view::npos ? input.size() : end + 1);
        ++number;
        if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
        if (line.empty()) break;  // the end of the credential
        const std::size_t equals = line.find('=');
        if (equals == std::string_view::npos) {
            throw Error(ErrorCode::bad_request, "line " + std::to_string(number) +
                                                    " of the credential on standard input "
                                                    "is not key=value");
        }
        apply_line(credential, line.substr(0, equals), line.substr(equals + 1));
    }
    return credential;
}

std::string format_answer(std::string_view username, std::string_view password,
                          std::optional<std::uint64_t> password_expiry_utc,
                          std::optional<std::string_view> oauth_refresh_token) {
    std::string out;
    // Room for everything up front: the buffer holding the secrets never
    // reallocates and leaves a copy behind.
    out.reserve(username.size() + password.size() +
                (oauth_refresh_token ? oauth_refresh_token->size() : 0) + 96);
    try {
        append_line(out, "username", username);
        append_line(out, "password", password);
        if (password_expiry_utc) {
            append_line(out, "password_expiry_utc", std::to_string(*password_expiry_utc));
        }
        if (oauth_refresh_token) append_line(out, "oauth_refresh_token", *oauth_refresh_token);
    } catch (...) {
        proto::scrub(out);
        throw;
    }
    return out;
}

}  // namespace hostkeeper::helper::git_credential_helper
