#pragma once
// Small text rules of HTTP header values (RFC 9110): optional whitespace and
// case-insensitive tokens, and the media type every Terraform document has.
// Shared by the discovery, registry and Cache-Control code.

#include <algorithm>
#include <cctype>
#include <string>
#include <string_view>

#include "proto/printable.hpp"

namespace hostkeeper::daemon::http {

// Without leading and trailing spaces and tabs (OWS).
inline std::string_view trim_ows(std::string_view s) {
    while (!s.empty() && (s.front() == ' ' || s.front() == '\t')) s.remove_prefix(1);
    while (!s.empty() && (s.back() == ' ' || s.back() == '\t')) s.remove_suffix(1);
    return s;
}

// ASCII case-insensitive equality, as tokens compare.
inline bool iequals(std::string_view a, std::string_view b) {
    return a.size() == b.size() && std::equal(a.begin(), a.end(), b.begin(), [](char x, char y) {
               return std::tolower(static_cast<unsigned char>(x)) ==
                      std::tolower(static_cast<unsigned char>(y));
           });
}

// True for "application/json", any case, with or without parameters.
inline bool is_json_media_type(std::string_view content_type) {
    return iequals(trim_ows(content_type.substr(0, content_type.find(';'))), "application/json");
}

// Why a response with this Content-Type is not a JSON document, or "" when it is.
inline std::string json_media_type_problem(std::string_view content_type) {
    if (content_type.empty())
        return "the response has no Content-Type; it must be application/json";
    if (!is_json_media_type(content_type)) {
        return "the Content-Type is \"" + proto::printable(content_type) +
               "\", not application/json";
    }
    return "";
}

}  // namespace hostkeeper::daemon::http
