// A network mirror's URL as config.toml gives it. A URL accepted becomes one
// https base ending in "/" whose host is normalized, and making a mirror of
// that base gives the same mirror.
#include "daemon/registry/mirror.hpp"
#include "fuzz_support.hpp"
#include "proto/error.hpp"
#include "proto/hostname.hpp"

using namespace hostkeeper;

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
    const std::string url(fuzz::text_of(data, size));
    daemon::registry::Mirror mirror;
    try {
        mirror = daemon::registry::make_mirror(url);
    } catch (const proto::Error& e) {
        fuzz::require(
            e.code() == proto::ErrorCode::bad_request || e.code() == proto::ErrorCode::bad_host,
            "make_mirror threw an unexpected code");
        return 0;
    }
    fuzz::require(mirror.base.rfind("https://" + mirror.host + "/", 0) == 0,
                  "a mirror base is not https://HOST/...");
    fuzz::require(mirror.base.back() == '/', "a mirror base does not end in /");
    fuzz::require(proto::normalize_hostname(mirror.host) == mirror.host,
                  "a mirror's host is not normalized");
    const daemon::registry::Mirror again = daemon::registry::make_mirror(mirror.base);
    fuzz::require(again.base == mirror.base && again.host == mirror.host,
                  "a mirror's base makes another mirror");
    return 0;
}
