#pragma once
// registry-cache.json: what `hostkeeper setup --registry-cache` decided (the
// capability, the tfrc files to write, the hosts named) and hostkeeperd reads
// at start. Its absence means the registry cache is off. The port is not in
// it: it is the registry port's (proto/port_link.hpp), learned from
// hostkeeper-portd.

#include <cstdint>
#include <filesystem>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "proto/secret.hpp"

namespace hostkeeper::daemon::registry_cache {

inline constexpr std::size_t kMaxCacheConfig = std::size_t{256} * 1024;
inline constexpr std::size_t kMinCapabilityChars = 22;  // base64url: 132 bits

struct CacheConfig {
    proto::Secret capability;  // the first path segment of every listener URL
    std::vector<std::filesystem::path> tfrc_files;
    std::vector<std::string> hosts;  // normalized
    std::filesystem::path origin;    // the file read, for messages

    // "http://127.0.0.1:PORT/CAPABILITY/"
    std::string base_url(std::uint16_t port) const;
};

// "127.0.0.1:PORT": where Terraform reaches the registry port.
std::string listen_address(std::uint16_t port);

// The file's text, as documented in proto/PROTOCOL.md ("The registry cache").
// A "listen" key (files written before the registry port) is read and
// ignored. Throws std::runtime_error naming the key that is wrong.
CacheConfig parse_cache_config(std::string_view text);

// A new capability: 32 bytes from getrandom(2), base64url without padding.
proto::Secret new_capability();

// $XDG_CONFIG_HOME/hostkeeper/registry-cache.json, else ~/.config/...
std::filesystem::path default_cache_config_path();

// $XDG_STATE_HOME/hostkeeper/registry-cache-hosts.json, else ~/.local/state/...:
// the daemon's own record of the hosts it routes (RoutedHosts).
std::filesystem::path default_state_path();

// nullopt when `path` does not exist. Throws std::runtime_error for a file
// that is unreadable, not the owner's, readable by others, or invalid.
std::optional<CacheConfig> load_cache_config(const std::filesystem::path& path);

}  // namespace hostkeeper::daemon::registry_cache
