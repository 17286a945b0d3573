#pragma once
// Which keyring backend hostkeeperd uses: config.toml's keyring.backend
// ("auto", "secret-service" or "pass") and keyring.password_store_dir.

#include <chrono>
#include <filesystem>
#include <optional>
#include <string>
#include <string_view>

namespace hostkeeper::daemon::backends {

inline constexpr std::string_view kAuto = "auto";
inline constexpr std::string_view kSecretService = "secret-service";
inline constexpr std::string_view kPass = "pass";

struct BackendOptions {
    std::string backend = std::string(kAuto);
    std::optional<std::filesystem::path>
        password_store_dir;  // else $PASSWORD_STORE_DIR, ~/.password-store
    std::chrono::milliseconds unlock_timeout{20000};
};

inline bool is_backend_name(std::string_view name) {
    return name == kSecretService || name == kPass;
}
inline bool is_backend_setting(std::string_view name) {
    return name == kAuto || is_backend_name(name);
}

}  // namespace hostkeeper::daemon::backends
