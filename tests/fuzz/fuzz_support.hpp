#pragma once
// What every fuzz target shares: the input as text, and invariant checks that
// end the run (a crash libFuzzer records) when a parser breaks its promise.

#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <string_view>
#include <vector>

namespace hostkeeper::fuzz {

inline std::string_view text_of(const std::uint8_t* data, std::size_t size) {
    return {reinterpret_cast<const char*>(data), size};
}

// An invariant the parser promises; its failure is a finding, like a crash.
inline void require(bool ok, const char* what) {
    if (!ok) {
        std::fprintf(stderr, "fuzz invariant broken: %s\n", what);
        std::abort();
    }
}

// The input split at the first NUL byte: two strings for targets of two
// arguments (a document and its URL, a value and a reference).
struct TwoParts {
    std::string_view first;
    std::string_view second;
};
inline TwoParts split_at_nul(std::string_view text) {
    const auto nul = text.find('\0');
    if (nul == std::string_view::npos) return {text, {}};
    return {text.substr(0, nul), text.substr(nul + 1)};
}

// The input split at every NUL: header values, one per part.
inline std::vector<std::string> split_all_at_nul(std::string_view text) {
    std::vector<std::string> parts;
    while (true) {
        const auto [part, more] = split_at_nul(text);
        parts.emplace_back(part);
        if (more.data() == nullptr || part.size() == text.size()) return parts;
        text = more;
    }
}

}  // namespace hostkeeper::fuzz
