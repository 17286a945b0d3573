#include "proto/paths.hpp"

#include "proto/file_io.hpp"

namespace hostkeeper::proto {
namespace fs = std::filesystem;

namespace {

fs::path config_home() {
    return xdg_base_dir("XDG_CONFIG_HOME", ".config");
}

fs::path systemd_user_dir() {
    return config_home() / "systemd" / "user";
}

}  // namespace

fs::path config_dir() {
    return config_home() / "hostkeeper";
}

fs::path config_toml_path() {
    return config_dir() / "config.toml";
}

fs::path registry_cache_config_path() {
    return config_dir() / "registry-cache.json";
}

fs::path state_dir() {
    return xdg_base_dir("XDG_STATE_HOME", ".local/state") / "hostkeeper";
}

fs::path registry_cache_state_path() {
    return state_dir() / "registry-cache-hosts.json";
}

fs::path setup_record_path() {
    return state_dir() / "setup.json";
}

fs::path cache_dir() {
    return xdg_base_dir("XDG_CACHE_HOME", ".cache") / "hostkeeper";
}

fs::path archives_dir() {
    return cache_dir() / "archives";
}

fs::path documents_dir() {
    return cache_dir() / "documents";
}

fs::path registry_cache_socket_drop_in_path() {
    return systemd_user_dir() / "hostkeeperd.socket.d" / "registry-cache.conf";
}

fs::path registry_cache_service_drop_in_path() {
    return systemd_user_dir() / "hostkeeperd.service.d" / "registry-cache.conf";
}

}  // namespace hostkeeper::proto
