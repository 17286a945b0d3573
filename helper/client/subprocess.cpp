#include "helper/client/subprocess.hpp"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <string_view>

namespace hostkeeper::helper::client {

Captured run_captured(const std::vector<std::string>& argv, std::chrono::milliseconds limit,
                      bool with_stderr) {
    Captured result;
    if (argv.empty()) return result;
    int fds[2];
    if (::pipe2(fds, O_CLOEXEC) != 0) return result;
    posix_spawn_file_actions_t actions;
    posix_spawn_file_actions_init(&actions);
    posix_spawn_file_actions_addopen(&actions, 0, "/dev/null", O_RDONLY, 0);
    posix_spawn_file_actions_adddup2(&actions, fds[1], 1);
    if (with_stderr) {
        posix_spawn_file_actions_adddup2(&actions, fds[1], 2);
    } else {
        posix_spawn_file_actions_addopen(&actions, 2, "/dev/null", O_WRONLY, 0);
    }
    std::vector<std::string> args = argv;
    std::vector<char*> pointers;
    pointers.reserve(args.size() + 1);
    for (auto& a : args) pointers.push_back(a.data());
    pointers.push_back(nullptr);
    pid_t pid = -1;
    const int rc = ::posix_spawnp(&pid, pointers[0], &actions, nullptr, pointers.data(), environ);
    posix_spawn_file_actions_destroy(&actions);
    ::close(fds[1]);
    if (rc != 0) {
        ::close(fds[0]);
        return result;
    }
    bool complete = false;
    const auto deadline = std::chrono::steady_clock::now() + limit;
    while (result.out.size() < (1U << 20U)) {
        const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
            deadline - std::chrono::steady_clock::now());
        if (left.count() <= 0) break;
        pollfd pfd{fds[0], POLLIN, 0};
        const int ready = ::poll(&pfd, 1, static_cast<int>(left.count()));
        if (ready < 0 && errno == EINTR) continue;
        if (ready <= 0) break;
        char buffer[4096];
        const ssize_t n = ::read(fds[0], buffer, sizeof buffer);
        if (n < 0 && errno == EINTR) continue;
        if (n <= 0) {
            complete = n == 0;
            break;
        }
        result.out.append(buffer, static_cast<std::size_t>(n));
    }
    ::close(fds[0]);
    if (!complete) {
        ::kill(pid, SIGKILL);
        result.timed_out = true;
    }
    int status = 0;
    while (::waitpid(pid, &status, 0) < 0 && errno == EINTR) {
    }
    result.status = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
    return result;
}

int run_attached(const std::vector<std::string>& argv, const std::vector<std::string>& set_env) {
    if (argv.empty()) return 127;
    std::vector<std::string> env = set_env;
    for (char** e = environ; *e != nullptr; ++e) {
        const std::string_view entry(*e);
        const std::string_view name = entry.substr(0, entry.find('='));
        const bool replaced = std::any_of(set_env.begin(), set_env.end(), [&](const auto& s) {
            return s.size() > name.size() && s.compare(0, name.size(), name) == 0 &&
                   s[name.size()] == '=';
        });
        if (!replaced) env.emplace_back(entry);
    }
    std::vector<std::string> args = argv;
    std::vector<char*> arg_pointers, env_pointers;
    for (auto& a : args) arg_pointers.push_back(a.data());
    arg_pointers.push_back(nullptr);
    for (auto& e : env) env_pointers.push_back(e.data());
    env_pointers.push_back(nullptr);
    pid_t pid = -1;
    if (::posix_spawnp(&pid, arg_pointers[0], nullptr, nullptr, arg_pointers.data(),
                       env_pointers.data()) != 0) {
        return 127;
    }
    int status = 0;
    while (::waitpid(pid, &status, 0) < 0 && errno == EINTR) {
    }
    return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
}

}  // namespace hostkeeper::helper::client
