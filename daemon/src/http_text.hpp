#pragma once
// Small text rules of HTTP header values (RFC 9110): optional whitespace and
// case-insensitive tokens. Shared by the media-type and Cache-Control checks.

#include <algorithm>
#include <cctype>
#include <string_view>

namespace hostkeeper::daemon {

// Without leading and trailing spaces and tabs (OWS).
inline std::string_view trim_ows(std::string_view s) {
    while (!s.empty() && (s.front() == ' ' || s.front() == '\t')) s.remove_prefix(1);
    while (!s.empty() && (s.back() == ' ' || s.back() == '\t')) s.remove_suffix(1);
    return s;
}

// ASCII case-insensitive equality, as tokens compare.
inline bool iequals(std::string_view a, std::string_view b) {
    return a.size() == b.size() && std::equal(a.begin(), a.end(), b.begin(), [](char x, char y) {
               return std::tolower(static_cast<unsigned char>(x)) == std::tolower(static_cast<unsigned char>(y));
           });
}

}  // namespace hostkeeper::daemon
