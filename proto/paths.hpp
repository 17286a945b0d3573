#pragma once
// Where hostkeeper's own files are, one function per file, every one below
// an XDG base directory (proto::xdg_base_dir: the variable when it holds an
// absolute path, else a directory below $HOME). The socket's path has rules
// of its own (proto/socket_path.hpp).

#include <filesystem>

namespace hostkeeper::proto {

// $XDG_CONFIG_HOME/hostkeeper, else ~/.config/hostkeeper.
std::filesystem::path config_dir();
// config_dir()/config.toml: hostkeeperd's settings.
std::filesystem::path config_toml_path();
// config_dir()/registry-cache.json: the registry cache's file (setup writes it).
std::filesystem::path registry_cache_config_path();

// $XDG_STATE_HOME/hostkeeper, else ~/.local/state/hostkeeper.
std::filesystem::path state_dir();
// state_dir()/registry-cache-hosts.json: the hosts the registry cache routes.
std::filesystem::path registry_cache_state_path();
// state_dir()/setup.json: what setup changed.
std::filesystem::path setup_record_path();

// $XDG_CACHE_HOME/hostkeeper, else ~/.cache/hostkeeper.
std::filesystem::path cache_dir();
// cache_dir()/archives: provider packages and module archives.
std::filesystem::path archives_dir();
// cache_dir()/documents: the registry cache's answers kept on disk.
std::filesystem::path documents_dir();

// $XDG_CONFIG_HOME/systemd/user/hostkeeperd.socket.d/registry-cache.conf:
// older setups made hostkeeperd.socket hold a TCP port of the user's there.
std::filesystem::path registry_cache_socket_drop_in_path();
// $XDG_CONFIG_HOME/systemd/user/hostkeeperd.service.d/registry-cache.conf:
// the directories hostkeeperd.service may write for the registry cache.
std::filesystem::path registry_cache_service_drop_in_path();

}  // namespace hostkeeper::proto
