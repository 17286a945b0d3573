#pragma once
// The registry cache's files, as hostkeeperd and the command line both read
// and write them (proto/PROTOCOL.md, "The registry cache"):
// registry-cache.json (what `hostkeeper setup --registry-cache` decided: the
// tfrc files to write, the hosts named; hostkeeperd reads it at start, and
// its absence means the cache is off), the tfrc files hostkeeperd writes
// (their name and first line), and the listener's address on the registry
// port. The file holds no secret: the listener's URLs are plain
// (http://127.0.0.1:PORT/...), since hostkeeper-portd hands each connection
// to its owner's daemon by the kernel's word.

#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <optional>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

namespace hostkeeper::proto {

// The first line of every tfrc file hostkeeperd writes (setup --undo and
// doctor recognise them by it), and the name setup gives them.
inline constexpr const char* kTfrcHeader = "# Written by hostkeeperd for the registry cache";
inline constexpr const char* kTfrcName = "hostkeeper.tfrc";

inline constexpr std::size_t kMaxRegistryCacheFile = std::size_t{256} * 1024;

struct RegistryCacheFile {
    std::vector<std::filesystem::path> tfrc_files;  // absolute
    std::vector<std::string> hosts;                 // normalized, each once
    // The file has a "capability" key (written when the listener's URLs
    // carried one): ignored, and dropped when setup writes the file again.
    bool old_capability = false;
};

// Thrown for a registry-cache.json that is not valid; what() names the key.
class RegistryCacheFileError : public std::runtime_error {
  public:
    using std::runtime_error::runtime_error;
};

// The file's text. Only "version" (1), "tfrc_files" (absolute file paths)
// and "hosts" (hostnames, normalized) are read; a "listen" key (files
// written before the registry port) and a "capability" key (files written
// when the URLs carried one) must be strings and are ignored; any other key
// is refused. Throws RegistryCacheFileError.
RegistryCacheFile parse_registry_cache_file(std::string_view text);

// The file's text (version 1), ending in a newline.
std::string registry_cache_file_text(const RegistryCacheFile& file);

// "127.0.0.1:PORT": where Terraform reaches the registry port.
std::string listen_address(std::uint16_t port);

// "http://127.0.0.1:PORT/": every listener URL is a route below it.
std::string base_url(std::uint16_t port);

// PORT of "127.0.0.1:PORT"; nullopt when `listen` is not that form.
std::optional<int> loopback_port(const std::string& listen);

// Whether `text` begins with hostkeeperd's tfrc header.
bool is_daemon_tfrc(std::string_view text);

// The 127.0.0.1 ports a tfrc file's service URLs point at (http://127.0.0.1:PORT/).
std::vector<int> tfrc_listener_ports(const std::string& text);

}  // namespace hostkeeper::proto
