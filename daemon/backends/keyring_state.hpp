#pragma once
// What `status` says about the keyring: the backend in use and why, and
// what `auto` tried.

#include <filesystem>
#include <optional>
#include <string>
#include <vector>

namespace hostkeeper::daemon::backends {

struct ProbeResult {
    std::string backend;  // "secret-service", "pass"
    bool usable = false;
    std::string detail;
};

struct KeyringState {
    std::optional<std::string> backend;  // nullopt: none usable (yet)
    std::string configured;              // "auto", "secret-service", "pass"
    std::string reason;
    std::optional<std::filesystem::path> store;  // pass
    std::optional<bool> store_writable;          // pass
    std::vector<ProbeResult> tried;              // auto
};

}  // namespace hostkeeper::daemon::backends
