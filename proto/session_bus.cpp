#include "proto/session_bus.hpp"

#include <sys/stat.h>
#include <unistd.h>

#include <cstdlib>

namespace hostkeeper::proto {

std::string session_bus_address(const EnvLookup& env, uid_t uid) {
    if (const char* address = env("DBUS_SESSION_BUS_ADDRESS");
        address != nullptr && address[0] != '\0') {
        return address;
    }
    const char* runtime = env("XDG_RUNTIME_DIR");
    if (runtime == nullptr || runtime[0] != '/') return "";
    const std::string bus = std::string(runtime) + "/bus";
    struct stat st {};
    if (::stat(bus.c_str(), &st) != 0 || !S_ISSOCK(st.st_mode) || st.st_uid != uid) return "";
    return "unix:path=" + bus;
}

std::string session_bus_address() {
    return session_bus_address([](const char* name) { return std::getenv(name); }, ::geteuid());
}

}  // namespace hostkeeper::proto
