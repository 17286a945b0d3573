#pragma once
// Settings of the archive cache (config.toml's registry_cache.max_archive_bytes)
// and where it lives.

#include <chrono>
#include <cstddef>
#include <filesystem>

namespace hostkeeper::daemon::archives {

struct ArchiveStoreOptions {
    std::filesystem::path dir;  // "": default_archive_dir()
    // The cache's size cap: the least recently used archives go beyond it
    // (never the one just stored, however large).
    std::size_t max_bytes = std::size_t{5} * 1024 * 1024 * 1024;  // 5 GiB
    std::chrono::seconds fetch_timeout{600};                      // one archive download
};

// $XDG_CACHE_HOME/hostkeeper/archives (an absolute $XDG_CACHE_HOME), else
// $HOME/.cache/hostkeeper/archives.
std::filesystem::path default_archive_dir();

}  // namespace hostkeeper::daemon::archives
