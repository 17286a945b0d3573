#pragma once
// The registry cache's files on the command line's side: hostkeeper's own
// $XDG_CONFIG_HOME/hostkeeper/registry-cache.json (written only by setup,
// read by hostkeeperd at start), the systemd drop-in that makes
// hostkeeperd.socket hold its port, and the tfrc files hostkeeperd writes
// (setup --undo removes those, doctor checks them). Formats: the design
// contract of issue 12, README "Registry cache".

#include <filesystem>
#include <optional>
#include <string>
#include <vector>

namespace hostkeeper::helper::cli {

// The first line of every tfrc file hostkeeperd writes.
inline constexpr const char* kTfrcHeader = "# Written by hostkeeperd for the registry cache";
inline constexpr const char* kTfrcName = "hostkeeper.tfrc";

struct RegistryCacheConfig {
    std::string listen;      // "127.0.0.1:PORT"
    std::string capability;  // 43 characters of base64url
    std::vector<std::filesystem::path> tfrc_files;
    std::vector<std::string> hosts;  // normalized
};

// $XDG_CONFIG_HOME/hostkeeper/registry-cache.json (XDG_CONFIG_HOME when
// absolute, else ~/.config), as hostkeeperd finds it.
std::filesystem::path registry_cache_config_path();
// $XDG_CONFIG_HOME/systemd/user/hostkeeperd.socket.d/registry-cache.conf
std::filesystem::path registry_cache_drop_in_path();

// The file, checked; nullopt when it does not exist. Throws proto::FileError
// naming the file and what is wrong with it.
std::optional<RegistryCacheConfig> read_registry_cache_config();
// The file's text (version 1), ending in a newline.
std::string registry_cache_json(const RegistryCacheConfig& config);
// The drop-in's text for `listen`.
std::string drop_in_text(const std::string& listen);

// 32 bytes from getrandom(2), base64url without padding (43 characters).
std::string new_capability();
std::string base64url(const unsigned char* bytes, std::size_t size);
// A port the kernel gives to a socket bound to 127.0.0.1:0 (then closed).
int free_loopback_port();
// PORT of "127.0.0.1:PORT"; nullopt when `listen` is not that form.
std::optional<int> loopback_port(const std::string& listen);

// True when `path` is a file whose first line is hostkeeperd's header.
bool written_by_daemon(const std::filesystem::path& path);
// The 127.0.0.1 ports the file's service URLs point at (http://127.0.0.1:PORT/).
std::vector<int> tfrc_listener_ports(const std::string& text);

}  // namespace hostkeeper::helper::cli
