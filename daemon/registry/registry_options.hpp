#pragma once
// Settings of the registry and network-mirror clients (config.toml's
// [registry] table).

#include <chrono>
#include <cstddef>
#include <filesystem>
#include <string>

namespace hostkeeper::daemon::registry {

struct RegistryOptions {
    std::chrono::seconds timeout{10};        // one request, redirects included (Terraform: 10 s)
    std::chrono::seconds versions_ttl{300};  // version lists (module, provider, mirror index.json)
    std::chrono::seconds download_ttl{
        3600};  // download locations, provider packages, mirror VERSION.json
    std::chrono::seconds negative_ttl{60};      // 404: no such module, provider, version or package
    std::chrono::seconds error_ttl{10};         // failures are remembered this long ...
    std::chrono::seconds max_retry_after{600};  // ... or as Retry-After asks, at most this
    std::chrono::seconds stale_if_error{
        86400};  // last good answer served this long past its freshness
    std::size_t max_entries = 4096;
    std::string
        mirror_url;  // "": providers come from their registries; else a network mirror (https)
    std::chrono::seconds fetch_timeout{600};  // downloading one provider package (provider fetch)
    // Where downloaded packages wait for the client (set by main: the socket's private directory).
    std::filesystem::path downloads_dir;
};

// The largest registry or mirror document read: version lists of large
// providers (every version with its platforms) run to hundreds of KiB.
inline constexpr std::size_t kMaxRegistryDocument = std::size_t{8} * 1024 * 1024;
inline constexpr int kMaxRegistryRedirects =
    10;  // Go's net/http default, which Terraform's client keeps

}  // namespace hostkeeper::daemon::registry
