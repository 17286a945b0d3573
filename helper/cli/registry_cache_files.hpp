#pragma once
// The registry cache's files on the command line's side: hostkeeper's own
// $XDG_CONFIG_HOME/hostkeeper/registry-cache.json (written only by setup,
// read by hostkeeperd at start), the service drop-in that lets the sandboxed
// hostkeeperd write its files, the socket drop-in older setups wrote (a TCP
// port of the user's own, which setup now removes), and the tfrc files
// hostkeeperd writes (setup --undo removes those, doctor checks them).
// Formats: proto/PROTOCOL.md, "The registry cache's listener".

#include <filesystem>
#include <optional>
#include <string>
#include <vector>

namespace hostkeeper::helper::cli {

// The first line of every tfrc file hostkeeperd writes.
inline constexpr const char* kTfrcHeader = "# Written by hostkeeperd for the registry cache";
inline constexpr const char* kTfrcName = "hostkeeper.tfrc";

struct RegistryCacheConfig {
    std::vector<std::filesystem::path> tfrc_files;
    std::vector<std::string> hosts;  // normalized
    // The file has a "capability" key (written when the listener's URLs
    // carried one): ignored, and dropped when setup writes the file again.
    bool old_capability = false;
};

// $XDG_CONFIG_HOME/hostkeeper/registry-cache.json (XDG_CONFIG_HOME when
// absolute, else ~/.config), as hostkeeperd finds it.
std::filesystem::path registry_cache_config_path();
// $XDG_CONFIG_HOME/systemd/user/hostkeeperd.socket.d/registry-cache.conf:
// older setups made hostkeeperd.socket hold a TCP port of the user's there.
std::filesystem::path registry_cache_drop_in_path();
// $XDG_CONFIG_HOME/systemd/user/hostkeeperd.service.d/registry-cache.conf:
// hostkeeperd.service runs with ProtectSystem=strict and ProtectHome=read-only,
// so the directories it writes for the registry cache are made writable here.
std::filesystem::path registry_cache_service_drop_in_path();

// The file, checked; nullopt when it does not exist. A "listen" key (older
// setups chose a port) and a "capability" key (older listener URLs carried
// one) are ignored. Throws proto::FileError naming the file
// and what is wrong with it.
std::optional<RegistryCacheConfig> read_registry_cache_config();
// The file's text (version 1), ending in a newline. It holds no secret.
std::string registry_cache_json(const RegistryCacheConfig& config);
// Where hostkeeperd writes for the registry cache: each tfrc file's
// directory, $XDG_CACHE_HOME/hostkeeper (archives), $XDG_STATE_HOME/hostkeeper
// (learned hosts); absolute, deduplicated.
std::vector<std::filesystem::path> daemon_write_dirs(const RegistryCacheConfig& config);
// The service drop-in's text: ReadWritePaths= for `dirs` (quoted, % escaped).
std::string service_drop_in_text(const std::vector<std::filesystem::path>& dirs);

// PORT of "127.0.0.1:PORT"; nullopt when `listen` is not that form.
std::optional<int> loopback_port(const std::string& listen);

// True when `path` is a file whose first line is hostkeeperd's header.
bool written_by_daemon(const std::filesystem::path& path);
// The 127.0.0.1 ports the file's service URLs point at (http://127.0.0.1:PORT/).
std::vector<int> tfrc_listener_ports(const std::string& text);

}  // namespace hostkeeper::helper::cli
