#include "subprocess.hpp"

#include <fcntl.h>
#include <spawn.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>

namespace hostkeeper::client {
namespace {

// Everything written to `fd` (a memfd), from the start; closes it.
std::string take(int fd) {
    std::string text;
    if (fd < 0) return text;
    ::lseek(fd, 0, SEEK_SET);
    char buffer[4096];
    ssize_t n = 0;
    while ((n = ::read(fd, buffer, sizeof buffer)) > 0 && text.size() < (1U << 20U)) {
        text.append(buffer, static_cast<std::size_t>(n));
    }
    ::close(fd);
    return text;
}

}  // namespace

Captured run_captured(const std::vector<std::string>& argv) {
    Captured result;
    if (argv.empty()) return result;
    // memfds, not pipes: no reader thread, and nothing reaches the disk.
    const int out = ::memfd_create("hostkeeper-out", MFD_CLOEXEC);
    const int err = ::memfd_create("hostkeeper-err", MFD_CLOEXEC);
    std::vector<std::string> args = argv;
    std::vector<char*> pointers;
    pointers.reserve(args.size() + 1);
    for (auto& a : args) pointers.push_back(a.data());
    pointers.push_back(nullptr);
    posix_spawn_file_actions_t actions;
    posix_spawn_file_actions_init(&actions);
    posix_spawn_file_actions_addopen(&actions, 0, "/dev/null", O_RDONLY, 0);
    if (out >= 0) posix_spawn_file_actions_adddup2(&actions, out, 1);
    if (err >= 0) posix_spawn_file_actions_adddup2(&actions, err, 2);
    pid_t pid = -1;
    const int rc = ::posix_spawn(&pid, pointers[0], &actions, nullptr, pointers.data(), environ);
    posix_spawn_file_actions_destroy(&actions);
    if (rc == 0) {
        int status = 0;
        while (::waitpid(pid, &status, 0) < 0 && errno == EINTR) {
        }
        result.status = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
    }
    result.out = take(out);
    result.err = take(err);
    return result;
}

}  // namespace hostkeeper::client
