#pragma once
// How the archive store names what it holds: "providers/<64 hex digits>"
// (the zip's SHA-256), "modules/<64 hex digits>" (the SHA-256 of its source
// URL), and in a shared directory "modules/<uid>/<64 hex digits>"; and what
// a stored file counts towards the cap.

#include <sys/stat.h>

#include <cstddef>
#include <cstdint>
#include <string_view>

namespace hostkeeper::daemon::archives {

inline constexpr std::size_t kHexDigits = 64;

// The 64 hex digits that end a stored file's name.
inline std::string_view hex_of(std::string_view name) {
    return name.substr(name.size() - kHexDigits);
}

inline bool is_provider_name(std::string_view name) {
    return name.rfind("providers/", 0) == 0;
}

// The disk space a stored file takes, as the cap counts it: its allocated
// blocks (st_blocks counts 512-byte units), not its length, so a sparse
// file counts what it holds.
inline std::uint64_t allocated_bytes(const struct stat& st) {
    return static_cast<std::uint64_t>(st.st_blocks) * 512U;
}

}  // namespace hostkeeper::daemon::archives
