#pragma once
// Small pieces shared by the parsers of outside texts (registry addresses,
// versions and constraints, registry documents, OCI documents and headers):
// ASCII classes and case, SHA-256 hex, and the quoting of a rejected text in
// an error. ASCII only: no locale decides what a letter is.

#include <string>
#include <string_view>

namespace hostkeeper::proto {

inline constexpr auto npos = std::string_view::npos;

inline bool is_digit(char c) {
    return c >= '0' && c <= '9';
}

inline bool is_lower_hex(char c) {
    return is_digit(c) || (c >= 'a' && c <= 'f');
}

// Which letters a hex text may use.
enum class HexCase { lower, any };

// Whether `text` is a SHA-256 in hex: 64 digits, a-f (and A-F with
// HexCase::any, as a registry may write a shasum).
inline bool is_sha256_hex(std::string_view text, HexCase letters = HexCase::lower) {
    if (text.size() != 64) return false;
    for (const char c : text) {
        const bool upper = c >= 'A' && c <= 'F';
        if (!is_lower_hex(c) && !(upper && letters == HexCase::any)) return false;
    }
    return true;
}

// `text` with A-Z as a-z; every other byte as it is.
inline std::string ascii_lowercase(std::string_view text) {
    std::string out(text);
    for (char& c : out) {
        if (c >= 'A' && c <= 'Z') c = static_cast<char>(c - 'A' + 'a');
    }
    return out;
}

// `s` between double quotes, as errors quote the text they reject.
inline std::string quoted(std::string_view s) {
    return '"' + std::string(s) + '"';
}

}  // namespace hostkeeper::proto
