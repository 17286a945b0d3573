#include "helper/docker_credential_helper/docker_credentials.hpp"

#include <array>
#include <map>

#include "proto/error.hpp"
#include "proto/messages.hpp"

namespace hostkeeper::helper::docker_credential_helper {
using proto::Error;
using proto::ErrorCode;
using proto::Json;

namespace {

constexpr std::string_view kNothingStored = "; nothing was stored";

// Go's encoding/json matches a member to a field with bytes.EqualFold when
// no name matches exactly: ASCII letters in either case, and the two
// non-ASCII letters that fold to ASCII ones, U+017F (long s) to s and
// U+212A (Kelvin sign) to k. Both sides are folded here and compared.
std::string fold(std::string_view name) {
    std::string out;
    out.reserve(name.size());
    for (std::size_t i = 0; i < name.size(); ++i) {
        const char c = name[i];
        if (c >= 'A' && c <= 'Z') {
            out += static_cast<char>(c - 'A' + 'a');
        } else if (name.substr(i, 2) == "\xC5\xBF") {
            out += 's';
            i += 1;
        } else if (name.substr(i, 3) == "\xE2\x84\xAA") {
            out += 'k';
            i += 2;
        } else {
            out += c;
        }
    }
    return out;
}

// The length of the well-formed UTF-8 sequence at text[i] (as Go's
// utf8.DecodeRuneInString accepts it), or 0 when the byte starts none.
std::size_t utf8_length(std::string_view text, std::size_t i) {
    const auto byte = [&](std::size_t k) { return static_cast<unsigned char>(text[i + k]); };
    const unsigned char first = byte(0);
    if (first < 0x80) return 1;
    std::size_t length = 0;
    unsigned char low = 0x80, high = 0xBF;  // the second byte's range
    if (first >= 0xC2 && first <= 0xDF) {
        length = 2;
    } else if (first >= 0xE0 && first <= 0xEF) {
        length = 3;
        if (first == 0xE0) low = 0xA0;   // no overlong forms
        if (first == 0xED) high = 0x9F;  // no surrogates
    } else if (first >= 0xF0 && first <= 0xF4) {
        length = 4;
        if (first == 0xF0) low = 0x90;
        if (first == 0xF4) high = 0x8F;  // nothing past U+10FFFF
    } else {
        return 0;
    }
    if (i + length > text.size() || byte(1) < low || byte(1) > high) return 0;
    for (std::size_t k = 2; k < length; ++k) {
        if ((byte(k) & 0xC0) != 0x80) return 0;
    }
    return length;
}

// A JSON string as Go's encoding/json writes it with HTML escaping on (the
// default of json.Marshal and json.NewEncoder), appended to `out`.
void append_go_string(std::string& out, std::string_view text) {
    constexpr std::string_view hex = "0123456789abcdef";
    out += '"';
    for (std::size_t i = 0; i < text.size();) {
        const auto c = static_cast<unsigned char>(text[i]);
        if (c < 0x80) {
            ++i;
            switch (c) {
                case '"':
                case '\\':
                    out += '\\';
                    out += static_cast<char>(c);
                    continue;
                case '\b':
                    out += "\\b";
                    continue;
                case '\f':
                    out += "\\f";
                    continue;
                case '\n':
                    out += "\\n";
                    continue;
                case '\r':
                    out += "\\r";
                    continue;
                case '\t':
                    out += "\\t";
                    continue;
                default:
                    break;
            }
            if (c < 0x20 || c == '<' || c == '>' || c == '&') {
                out += "\\u00";
                out += hex[c >> 4];
                out += hex[c & 0xF];
            } else {
                out += static_cast<char>(c);
            }
            continue;
        }
        const std::size_t length = utf8_length(text, i);
        if (length == 0) {
            out += "\\ufffd";
            ++i;
        } else if (length == 3 && text.substr(i, 2) == "\xE2\x80" &&
                   (text[i + 2] == '\xA8' || text[i + 2] == '\xA9')) {
            out += text[i + 2] == '\xA8' ? "\\u2028" : "\\u2029";
            i += 3;
        } else {
            out.append(text.substr(i, length));
            i += length;
        }
    }
    out += '"';
}

// Room for `text` written as a Go string in the worst case (every byte
// \u00XX), so that the buffer holding a secret never reallocates and leaves
// a copy behind.
std::size_t escaped_bound(std::string_view text) {
    return 6 * text.size() + 2;
}

}  // namespace

DockerCredentials parse_store_input(std::string_view input) {
    Json document;
    try {
        document = proto::parse_json(input);
    } catch (const proto::JsonError& e) {
        throw Error(ErrorCode::bad_request,
                    std::string("the credentials are ") + e.what() + std::string(kNothingStored));
    }
    const proto::ScrubGuard document_guard(document);
    if (!document.is_object()) {
        throw Error(ErrorCode::bad_request,
                    "the credentials must be a JSON object" + std::string(kNothingStored));
    }
    // The fields, in the order of `names`; a later member replaces an earlier one.
    static const std::array<std::string_view, 3> names{"ServerURL", "Username", "Secret"};
    std::array<const Json*, 3> fields{};
    for (const auto& [key, value] : document.items()) {
        const std::string folded = fold(key);
        for (std::size_t f = 0; f < names.size(); ++f) {
            if (folded != fold(names[f])) continue;
            if (value.is_null()) break;  // Go leaves the field as it was
            if (!value.is_string()) {
                throw Error(ErrorCode::bad_request, "the \"" + std::string(names[f]) +
                                                        "\" property must be a string" +
                                                        std::string(kNothingStored));
            }
            fields.at(f) = &value;
            break;
        }
    }
    const auto text = [&](std::size_t f) {
        return fields.at(f) != nullptr
                   ? std::string_view(fields.at(f)->get_ref<const std::string&>())
                   : std::string_view();
    };
    // Upstream checks only that they are not empty; the server URL is then
    // the daemon's key, which drops blanks around it.
    if (text(0).empty()) throw Error(ErrorCode::bad_request, std::string(kMissingServerURL));
    if (text(1).empty()) throw Error(ErrorCode::bad_request, std::string(kMissingUsername));
    DockerCredentials out;
    try {
        out.server = proto::docker_server_key(text(0));
    } catch (const Error& e) {
        if (e.what() == kMissingServerURL) throw;
        throw Error(e.code(), e.what() + std::string(kNothingStored));
    }
    if (text(1).size() > proto::kMaxDockerUsernameSize) {
        throw Error(ErrorCode::bad_request, "the username is over " +
                                                std::to_string(proto::kMaxDockerUsernameSize) +
                                                " bytes" + std::string(kNothingStored));
    }
    out.username = std::string(text(1));
    out.secret = proto::Secret(text(2));
    return out;
}

std::string parse_server_input(std::string_view input) {
    // bufio.Scanner's lines: each ends at "\n", and a "\r" before it (or
    // before the end of the input) is part of the line end.
    std::string joined;
    joined.reserve(input.size());
    while (!input.empty()) {
        const std::size_t end = input.find('\n');
        std::string_view line = input.substr(0, end);
        if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
        joined.append(line);
        if (end == std::string_view::npos) break;
        input.remove_prefix(end + 1);
    }
    return proto::docker_server_key(joined);
}

std::string format_credentials(std::string_view server, std::string_view username,
                               std::string_view secret) {
    std::string out;
    out.reserve(escaped_bound(server) + escaped_bound(username) + escaped_bound(secret) + 64);
    out += "{\"ServerURL\":";
    append_go_string(out, server);
    out += ",\"Username\":";
    append_go_string(out, username);
    out += ",\"Secret\":";
    append_go_string(out, secret);
    out += "}\n";
    return out;
}

std::string format_list(const Json& servers) {
    if (!servers.is_object()) {
        throw Error(ErrorCode::internal,
                    "hostkeeperd's docker_list answer has no \"servers\" object");
    }
    // Go writes a map's keys sorted (byte order).
    std::map<std::string, std::string> sorted;
    for (const auto& [server, username] : servers.items()) {
        if (!username.is_string()) {
            throw Error(ErrorCode::internal,
                        "hostkeeperd's docker_list answer has a username that is not a string");
        }
        sorted.emplace(server, username.get_ref<const std::string&>());
    }
    std::string out = "{";
    for (const auto& [server, username] : sorted) {
        if (out.size() > 1) out += ',';
        append_go_string(out, server);
        out += ':';
        append_go_string(out, username);
    }
    out += "}\n";
    return out;
}

}  // namespace hostkeeper::helper::docker_credential_helper
