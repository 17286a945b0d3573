#pragma once
// Settings of the credentials cache (config.toml's [credentials] table).

#include <chrono>
#include <cstddef>

namespace hostkeeper::daemon::credentials {

struct CredentialCacheOptions {
    std::chrono::seconds ttl{600};            // sliding, renewed on use; 0 disables caching
    std::chrono::seconds max_lifetime{7200};  // absolute, from load
    std::chrono::seconds negative_ttl{60};    // "no credentials for this host"; 0 disables
    std::size_t max_entries = 10'000;
};

}  // namespace hostkeeper::daemon::credentials
