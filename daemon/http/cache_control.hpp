#pragma once
// The Cache-Control directives a private cache of discovery documents obeys
// (RFC 9111 section 5.2.2): max-age, no-store, no-cache. Pure.

#include <chrono>
#include <optional>
#include <string>
#include <vector>

namespace hostkeeper::daemon::http {

struct CacheDirectives {
    std::optional<std::chrono::seconds> max_age;
    bool no_store = false;
    bool no_cache = false;  // may be stored, but is stale at once
};

// All Cache-Control header values of a response, in order. Unknown
// directives are ignored; a malformed max-age is ignored (RFC 9111 4.2.1).
CacheDirectives parse_cache_control(const std::vector<std::string>& headers);

// How long a response stays fresh: `fallback` unless the server said
// otherwise, `age` (the Age header) taken off, clamped into [low, high].
std::chrono::seconds freshness(const CacheDirectives& directives, std::optional<long long> age,
                               std::chrono::seconds fallback, std::chrono::seconds low,
                               std::chrono::seconds high);

}  // namespace hostkeeper::daemon::http
