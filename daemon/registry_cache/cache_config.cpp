#include "daemon/registry_cache/cache_config.hpp"

#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <stdexcept>
#include <string>

#include "proto/file_io.hpp"
#include "proto/secret.hpp"

namespace hostkeeper::daemon::registry_cache {
namespace fs = std::filesystem;

namespace {

[[noreturn]] void bad(const std::string& what) {
    throw std::runtime_error("registry-cache.json: " + what);
}

}  // namespace

CacheConfig parse_cache_config(std::string_view text) {
    CacheConfig config;
    try {
        static_cast<proto::RegistryCacheFile&>(config) = proto::parse_registry_cache_file(text);
    } catch (const proto::RegistryCacheFileError& e) {
        bad(e.what());
    }
    return config;
}

std::optional<CacheConfig> load_cache_config(const fs::path& path) {
    struct stat st {};
    if (::lstat(path.c_str(), &st) != 0) {
        if (errno == ENOENT) return std::nullopt;
        bad(path.string() + ": cannot be read");
    }
    // It names the files the daemon rewrites: the owner's, and nobody else's.
    if (!S_ISREG(st.st_mode)) bad(path.string() + " is not a regular file");
    if (st.st_uid != ::geteuid()) bad(path.string() + " is not owned by this user");
    if ((st.st_mode & 077) != 0) bad(path.string() + " is readable by others: chmod 600 it");
    std::optional<std::string> text;
    try {
        text = proto::read_file_if_exists(path, proto::kMaxRegistryCacheFile);
    } catch (const proto::FileError& e) {
        bad(e.what());
    }
    if (!text) return std::nullopt;
    CacheConfig config = parse_cache_config(*text);
    proto::scrub(*text);
    config.origin = path;
    return config;
}

}  // namespace hostkeeper::daemon::registry_cache
