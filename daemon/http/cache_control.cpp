#include "daemon/http/cache_control.hpp"

#include <algorithm>
#include <cctype>
#include <string_view>

#include "daemon/http/http_text.hpp"

namespace hostkeeper::daemon::http {
namespace {

// delta-seconds: digits only; values too large to hold mean "a very long time".
std::optional<long long> delta_seconds(std::string_view text) {
    if (text.size() >= 2 && text.front() == '"' && text.back() == '"')
        text = text.substr(1, text.size() - 2);
    if (text.empty()) return std::nullopt;
    long long value = 0;
    for (const char c : text) {
        if (std::isdigit(static_cast<unsigned char>(c)) == 0) return std::nullopt;
        value = std::min<long long>(value * 10 + (c - '0'), 1LL << 31);
    }
    return value;
}

// Splits on commas outside quoted strings.
template <typename F>
void for_each_directive(std::string_view header, F&& f) {
    bool quoted = false;
    std::size_t start = 0;
    for (std::size_t i = 0; i <= header.size(); ++i) {
        if (i < header.size() && header[i] == '"') quoted = !quoted;
        if (i == header.size() || (header[i] == ',' && !quoted)) {
            const std::string_view item = trim_ows(header.substr(start, i - start));
            if (!item.empty()) {
                const auto eq = item.find('=');
                f(trim_ows(item.substr(0, eq)), eq == std::string_view::npos
                                                    ? std::string_view{}
                                                    : trim_ows(item.substr(eq + 1)));
            }
            start = i + 1;
        }
    }
}

}  // namespace

CacheDirectives parse_cache_control(const std::vector<std::string>& headers) {
    CacheDirectives out;
    for (const std::string& header : headers) {
        for_each_directive(header, [&out](std::string_view name, std::string_view value) {
            if (iequals(name, "no-store")) {
                out.no_store = true;
            } else if (iequals(name, "no-cache")) {
                out.no_cache = true;
            } else if (iequals(name, "max-age")) {
                if (const auto seconds = delta_seconds(value)) {
                    // Two max-age directives: the smaller wins (the safe reading).
                    const std::chrono::seconds parsed(*seconds);
                    out.max_age = out.max_age ? std::min(*out.max_age, parsed) : parsed;
                }
            }
        });
    }
    return out;
}

std::chrono::seconds freshness(const CacheDirectives& directives, std::optional<long long> age,
                               std::chrono::seconds fallback, std::chrono::seconds low,
                               std::chrono::seconds high) {
    std::chrono::seconds ttl = fallback;
    if (directives.no_cache) {
        ttl = std::chrono::seconds(0);
    } else if (directives.max_age) {
        ttl = *directives.max_age - std::chrono::seconds(std::max<long long>(age.value_or(0), 0));
    }
    return std::clamp(ttl, low, std::max(low, high));
}

}  // namespace hostkeeper::daemon::http
