#pragma once
// Small pieces shared by proto's parsers of Terraform's texts (registry
// addresses, versions and constraints): ASCII classes and the quoting of a
// rejected text in an error.

#include <string>
#include <string_view>

namespace hostkeeper::proto {

inline constexpr auto npos = std::string_view::npos;

inline bool is_digit(char c) {
    return c >= '0' && c <= '9';
}

// `s` between double quotes, as errors quote the text they reject.
inline std::string quoted(std::string_view s) {
    return '"' + std::string(s) + '"';
}

}  // namespace hostkeeper::proto
