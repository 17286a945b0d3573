#pragma once
// registry-cache.json as hostkeeperd reads it at start: the format is
// proto's (proto/registry_cache_file.hpp); here, the file's own checks (the
// owner's, nobody else's) and where it came from. The port is not in it: it
// is the registry port's (proto/port_link.hpp), learned from hostkeeper-portd.

#include <filesystem>
#include <optional>
#include <string_view>

#include "proto/registry_cache_file.hpp"

namespace hostkeeper::daemon::registry_cache {

using proto::base_url;
using proto::listen_address;

struct CacheConfig : proto::RegistryCacheFile {
    std::filesystem::path origin;  // the file read, for messages
};

// The file's text. Throws std::runtime_error naming the key that is wrong.
CacheConfig parse_cache_config(std::string_view text);

// nullopt when `path` does not exist. Throws std::runtime_error for a file
// that is unreadable, not the owner's, readable by others, or invalid.
std::optional<CacheConfig> load_cache_config(const std::filesystem::path& path);

}  // namespace hostkeeper::daemon::registry_cache
