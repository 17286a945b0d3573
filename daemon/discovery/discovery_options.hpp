#pragma once
// Settings of remote service discovery (config.toml's [discovery] table and
// the [hosts."NAME".services] tables).

#include <chrono>
#include <cstddef>
#include <map>
#include <set>
#include <string>

#include "proto/messages.hpp"

namespace hostkeeper::daemon::discovery {

struct DiscoveryOptions {
    std::chrono::seconds timeout{11};  // one fetch, redirects included
    std::chrono::seconds ttl{900};     // freshness of a document without max-age
    std::chrono::seconds min_ttl{60};  // max-age is clamped into [min_ttl, max_ttl]
    std::chrono::seconds max_ttl{86400};
    std::chrono::seconds negative_ttl{300};     // 404, "no services"
    std::chrono::seconds error_ttl{10};         // failures are remembered this long ...
    std::chrono::seconds max_retry_after{600};  // ... or as Retry-After asks, at most this
    std::chrono::seconds stale_if_error{
        86400};  // last good answer served this long past its freshness
    std::size_t max_entries = 10'000;
    // Normalized host -> its services as configured (values not yet resolved).
    std::map<std::string, proto::Json> forced;
    // [hosts."NAME"] rotate_lifetime: the lifetime of a token `rotate` creates.
    std::chrono::seconds rotate_lifetime{std::chrono::hours(24 * 30)};
    std::map<std::string, std::chrono::seconds> host_rotate_lifetime;
    // [hosts."NAME"] rotate = true: rotated in the background before expiry.
    std::set<std::string> rotate;
};

}  // namespace hostkeeper::daemon::discovery
