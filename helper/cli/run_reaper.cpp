#include "helper/cli/run_reaper.hpp"

#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <ctime>
#include <fstream>
#include <sstream>

#include "helper/client/exit_codes.hpp"

namespace hostkeeper::helper::cli {

namespace {

constexpr long kPollNanoseconds = 200'000'000;

// Whether every child left is a hostkeeperd; false when the kernel does not say.
bool only_daemons_left() {
    std::ifstream children("/proc/self/task/" + std::to_string(::getpid()) + "/children");
    if (!children) return false;
    pid_t pid = 0;
    while (children >> pid) {
        std::ifstream comm("/proc/" + std::to_string(pid) + "/comm");
        std::string name;
        if (!std::getline(comm, name) || name != "hostkeeperd") return false;
    }
    return true;
}

[[noreturn]] void reap(pid_t command) {
    sigset_t waited;
    sigemptyset(&waited);
    for (const int sig : {SIGCHLD, SIGINT, SIGTERM, SIGHUP}) sigaddset(&waited, sig);
    int status = client::kExitFailed;
    bool ended = false;
    for (;;) {
        for (;;) {
            int raw = 0;
            const pid_t pid = ::waitpid(-1, &raw, WNOHANG);
            if (pid < 0 && errno == ECHILD) ::_exit(status);
            if (pid <= 0) break;
            if (pid == command) {
                status = exit_status(raw);
                ended = true;
            }
        }
        if (ended && only_daemons_left()) ::_exit(status);
        const timespec pause{0, kPollNanoseconds};
        siginfo_t info{};
        const int sig = ::sigtimedwait(&waited, &info, &pause);
        // A terminal's signal (SI_KERNEL) reached COMMAND too: not twice.
        if (sig > 0 && sig != SIGCHLD && info.si_code != SI_KERNEL && !ended) ::kill(command, sig);
    }
}

}  // namespace

int exit_status(int raw) {
    return WIFEXITED(raw) ? WEXITSTATUS(raw) : 128 + WTERMSIG(raw);
}

pid_t start_reaper(const std::vector<std::string>& argv, const std::vector<std::string>& envp,
                   const sigset_t& previous, const std::vector<int>& close_fds) {
    std::vector<char*> args;
    args.reserve(argv.size() + 1);
    // NOLINTNEXTLINE(cppcoreguidelines-pro-type-const-cast): execvp's type; it does not write
    for (const auto& arg : argv) args.push_back(const_cast<char*>(arg.c_str()));
    args.push_back(nullptr);
    std::vector<char*> env;
    env.reserve(envp.size() + 1);
    // NOLINTNEXTLINE(cppcoreguidelines-pro-type-const-cast): execve's type; it does not write
    for (const auto& entry : envp) env.push_back(const_cast<char*>(entry.c_str()));
    env.push_back(nullptr);
    std::fflush(nullptr);
    const pid_t reaper = ::fork();
    if (reaper != 0) return reaper;
    for (const int fd : close_fds) ::close(fd);
    ::prctl(PR_SET_CHILD_SUBREAPER, 1);
    const pid_t command = ::fork();
    if (command < 0) ::_exit(client::kExitFailed);
    if (command == 0) {
        ::sigprocmask(SIG_SETMASK, &previous, nullptr);
        ::execvpe(args[0], args.data(), env.data());
        ::_exit(errno == ENOENT ? client::kExitCommandNotFound : client::kExitCannotExecute);
    }
    reap(command);
}

}  // namespace hostkeeper::helper::cli
