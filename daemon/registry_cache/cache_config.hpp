#pragma once
// registry-cache.json: what `hostkeeper setup --registry-cache` decided (the
// tfrc files to write, the hosts named) and hostkeeperd reads at start. Its
// absence means the registry cache is off. It holds no secret: the listener's
// URLs are plain (http://127.0.0.1:PORT/...), since hostkeeper-portd hands
// each connection to its owner's daemon by the kernel's word. The port is not
// in it: it is the registry port's (proto/port_link.hpp), learned from
// hostkeeper-portd.

#include <cstdint>
#include <filesystem>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace hostkeeper::daemon::registry_cache {

inline constexpr std::size_t kMaxCacheConfig = std::size_t{256} * 1024;

struct CacheConfig {
    std::vector<std::filesystem::path> tfrc_files;
    std::vector<std::string> hosts;  // normalized
    std::filesystem::path origin;    // the file read, for messages
};

// "127.0.0.1:PORT": where Terraform reaches the registry port.
std::string listen_address(std::uint16_t port);

// "http://127.0.0.1:PORT/": every listener URL is a route below it.
std::string base_url(std::uint16_t port);

// The file's text, as documented in proto/PROTOCOL.md ("The registry cache").
// A "listen" key (files written before the registry port) and a
// "capability" key (files written when the URLs carried one) are read and
// ignored. Throws std::runtime_error naming the key that is wrong.
CacheConfig parse_cache_config(std::string_view text);

// $XDG_CONFIG_HOME/hostkeeper/registry-cache.json, else ~/.config/...
std::filesystem::path default_cache_config_path();

// $XDG_STATE_HOME/hostkeeper/registry-cache-hosts.json, else ~/.local/state/...:
// the daemon's own record of the hosts it routes (RoutedHosts).
std::filesystem::path default_state_path();

// nullopt when `path` does not exist. Throws std::runtime_error for a file
// that is unreadable, not the owner's, readable by others, or invalid.
std::optional<CacheConfig> load_cache_config(const std::filesystem::path& path);

}  // namespace hostkeeper::daemon::registry_cache
