// registry-cache.json as hostkeeperd reads it at start. Refusals are
// runtime_errors naming the file; an accepted file (an older one's
// "capability" is read and ignored) has absolute tfrc paths and normalized,
// distinct hosts, and the listener's base URL carries no secret segment.
#include <set>
#include <stdexcept>
#include <string>

#include "daemon/registry_cache/cache_config.hpp"
#include "fuzz_support.hpp"
#include "proto/hostname.hpp"

using namespace hostkeeper;

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
    const std::string_view text = fuzz::text_of(data, size);
    daemon::registry_cache::CacheConfig config;
    try {
        config = daemon::registry_cache::parse_cache_config(text);
    } catch (const std::runtime_error& e) {
        const std::string message = e.what();
        fuzz::require(message.rfind("registry-cache.json: ", 0) == 0,
                      "a refusal does not name registry-cache.json");
        return 0;
    }
    fuzz::require(daemon::registry_cache::base_url(585) == "http://127.0.0.1:585/",
                  "base_url is not http://127.0.0.1:PORT/");
    for (const auto& file : config.tfrc_files)
        fuzz::require(file.is_absolute(), "an accepted tfrc path is relative");
    std::set<std::string> seen;
    for (const std::string& host : config.hosts) {
        fuzz::require(proto::normalize_hostname(host) == host,
                      "an accepted host is not normalized");
        fuzz::require(seen.insert(host).second, "an accepted host is listed twice");
    }
    return 0;
}
