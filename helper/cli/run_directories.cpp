#include "helper/cli/run_directories.hpp"

#include <signal.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <string>
#include <system_error>

namespace hostkeeper::helper::cli {
namespace fs = std::filesystem;

namespace {

constexpr const char* kRunPrefix = "run-";

// The pid in the name of a run's directory (kRunPrefix, the pid, '-'); 0
// when it names none.
long run_pid(const std::string& name) {
    char* end = nullptr;
    const long pid = std::strtol(name.c_str() + std::strlen(kRunPrefix), &end, 10);
    return end != nullptr && *end == '-' ? pid : 0;
}

}  // namespace

proto::SocketLocation socket_location(const client::ClientOptions& client) {
    return client.socket ? proto::SocketLocation{*client.socket, client.socket->parent_path()}
                         : proto::resolve_socket_location();
}

fs::path runs_directory(const proto::SocketLocation& location) {
    return location.directory / "runs";
}

std::size_t remove_stale_runs(const fs::path& runs) {
    if (!proto::is_private_directory(runs.parent_path(), ::geteuid()) ||
        !proto::is_private_directory(runs, ::geteuid()))
        return 0;
    std::size_t removed = 0;
    std::error_code ec;
    for (fs::directory_iterator it(runs, ec), end; !ec && it != end; it.increment(ec)) {
        const std::string name = it->path().filename().string();
        if (name.rfind(kRunPrefix, 0) != 0) continue;
        const long pid = run_pid(name);
        if (pid > 0 && (::kill(static_cast<pid_t>(pid), 0) == 0 || errno != ESRCH)) continue;
        std::error_code failed;
        fs::remove_all(it->path(), failed);
        if (!failed) ++removed;
    }
    return removed;
}

fs::path make_run_directory(const proto::SocketLocation& location) {
    proto::ensure_private_directory(location.directory, ::geteuid());
    const fs::path runs = runs_directory(location);
    proto::ensure_private_directory(runs, ::geteuid());
    remove_stale_runs(runs);
    std::string name = (runs / (kRunPrefix + std::to_string(::getpid()) + "-XXXXXX")).string();
    if (::mkdtemp(name.data()) == nullptr)
        throw std::system_error(errno, std::generic_category(), "making the run's directory");
    return name;
}

}  // namespace hostkeeper::helper::cli
