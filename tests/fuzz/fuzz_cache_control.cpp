// Cache-Control header values of a discovery response; NUL bytes separate
// several headers. max-age is never negative, and freshness stays within the
// bounds it is given.
#include <chrono>
#include <string>
#include <vector>

#include "daemon/http/cache_control.hpp"
#include "fuzz_support.hpp"

using namespace hostkeeper;
using std::chrono::seconds;

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
    const std::vector<std::string> headers = fuzz::split_all_at_nul(fuzz::text_of(data, size));
    const daemon::http::CacheDirectives directives = daemon::http::parse_cache_control(headers);
    if (directives.max_age) {
        fuzz::require(directives.max_age->count() >= 0, "max-age is negative");
        fuzz::require(directives.max_age->count() <= (1LL << 31), "max-age is past 2^31 seconds");
    }
    for (const long long age : {-5LL, 0LL, 100LL, 1LL << 40}) {
        const seconds ttl =
            daemon::http::freshness(directives, age, seconds(300), seconds(60), seconds(3600));
        fuzz::require(ttl >= seconds(60) && ttl <= seconds(3600), "freshness outside [low, high]");
        if (directives.no_cache) fuzz::require(ttl == seconds(60), "no-cache is not stale at once");
    }
    return 0;
}
