#include "daemon/credentials/command_runner.hpp"

#include <fcntl.h>
#include <poll.h>
#include <pwd.h>
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <cerrno>
#include <cstdlib>
#include <filesystem>
#include <set>
#include <system_error>
#include <thread>

#include "daemon/credentials/command_output.hpp"
#include "proto/program_search.hpp"
#include "proto/unique_fd.hpp"

namespace hostkeeper::daemon::credentials {
namespace {

using steady = std::chrono::steady_clock;
constexpr std::size_t kMaxErrorLine = 512;

// Variables of the daemon's own unit that are not the command's business.
const std::set<std::string, std::less<>>& unit_variables() {
    static const std::set<std::string, std::less<>> names{
        "INVOCATION_ID", "JOURNAL_STREAM",        "LISTEN_FDS",
        "LISTEN_PID",    "LISTEN_FDNAMES",        "NOTIFY_SOCKET",
        "MANAGERPID",    "SYSTEMD_EXEC_PID",      "WATCHDOG_PID",
        "WATCHDOG_USEC", "MEMORY_PRESSURE_WATCH", "MEMORY_PRESSURE_WRITE"};
    return names;
}

// The daemon's environment, with HOME set from the user database when it is not.
std::vector<std::string> command_environment() {
    std::vector<std::string> env;
    for (char** entry = environ; entry != nullptr && *entry != nullptr; ++entry)
        env.emplace_back(*entry);
    if (std::getenv("HOME") == nullptr) {
        passwd entry{};
        passwd* user = nullptr;
        std::array<char, 4096> buffer{};
        if (::getpwuid_r(::getuid(), &entry, buffer.data(), buffer.size(), &user) == 0 &&
            user != nullptr && user->pw_dir != nullptr)
            env.push_back(std::string("HOME=") + user->pw_dir);
    }
    return env;
}

std::vector<std::string> environment_names(const std::vector<std::string>& env) {
    std::vector<std::string> names;
    for (const std::string& entry : env) {
        const std::string name = entry.substr(0, entry.find('='));
        if (name.empty() || unit_variables().count(name) != 0) continue;
        if (name.find_first_not_of(
                "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789_") !=
            std::string::npos)
            continue;
        names.push_back(name);
    }
    return names;
}

std::vector<char*> pointers(std::vector<std::string>& strings) {
    std::vector<char*> out;
    out.reserve(strings.size() + 1);
    for (std::string& s : strings) out.push_back(s.data());
    out.push_back(nullptr);
    return out;
}

// Standard output and standard error, read until both end, the time is up
// or the output is too long.
class Capture {
  public:
    Capture(proto::UniqueFd out, proto::UniqueFd err, CommandRun& run)
        : out_(std::move(out)), err_(std::move(err)), run_(run) {
        output_.reserve(kMaxCommandOutput + 1);  // never reallocated: nothing left unscrubbed
    }
    Capture(const Capture&) = delete;
    Capture& operator=(const Capture&) = delete;
    ~Capture() { proto::scrub(output_); }

    // False when the time ran out or the output was too long.
    bool read_until(steady::time_point deadline) {
        while (out_.get() >= 0 || err_.get() >= 0) {
            std::array<pollfd, 2> fds{pollfd{out_.get(), POLLIN, 0}, pollfd{err_.get(), POLLIN, 0}};
            const auto left =
                std::chrono::ceil<std::chrono::milliseconds>(deadline - steady::now());
            if (left.count() <= 0) return false;
            const int ready = ::poll(fds.data(), fds.size(),
                                     static_cast<int>(std::min<long long>(left.count(), 60'000)));
            if (ready < 0 && errno == EINTR) continue;
            if (ready < 0) return false;
            if (fds[0].revents != 0 && !read_output()) return false;
            if (fds[1].revents != 0) read_error();
        }
        run_.output = proto::Secret::adopt(output_);
        return true;
    }

  private:
    bool read_output() {
        const std::size_t room = kMaxCommandOutput + 1 - output_.size();
        const std::size_t had = output_.size();
        output_.resize(had + room);
        const ssize_t n = ::read(out_.get(), output_.data() + had, room);
        output_.resize(had + static_cast<std::size_t>(n > 0 ? n : 0));
        if (n == 0 || (n < 0 && errno != EINTR && errno != EAGAIN)) out_ = proto::UniqueFd(-1);
        if (output_.size() > kMaxCommandOutput) {
            run_.too_much_output = true;
            return false;
        }
        return true;
    }

    void read_error() {
        std::array<char, 4096> buffer{};
        const ssize_t n = ::read(err_.get(), buffer.data(), buffer.size());
        if (n == 0 || (n < 0 && errno != EINTR && errno != EAGAIN)) {
            err_ = proto::UniqueFd(-1);
            return;
        }
        if (n < 0 || error_line_done_) return;
        for (ssize_t i = 0; i < n && !error_line_done_; ++i) {
            const char c = buffer[static_cast<std::size_t>(i)];
            if (c == '\n') {
                error_line_done_ = !run_.first_error_line.empty();
            } else if (run_.first_error_line.size() < kMaxErrorLine) {
                run_.first_error_line.push_back(c);
            }
        }
    }

    proto::UniqueFd out_;
    proto::UniqueFd err_;
    CommandRun& run_;
    std::string output_;
    bool error_line_done_ = false;
};

// Starts argv in a process group of its own; its pid, or -1 with
// run.launch_error set.
pid_t start(std::vector<std::string>& argv, std::vector<std::string>& env, int out, int err,
            CommandRun& run) {
    posix_spawn_file_actions_t actions;
    posix_spawn_file_actions_init(&actions);
    posix_spawn_file_actions_addopen(&actions, STDIN_FILENO, "/dev/null", O_RDONLY, 0);
    posix_spawn_file_actions_adddup2(&actions, out, STDOUT_FILENO);
    posix_spawn_file_actions_adddup2(&actions, err, STDERR_FILENO);
    posix_spawnattr_t attr;
    posix_spawnattr_init(&attr);
    sigset_t none;
    sigset_t all;
    sigemptyset(&none);
    sigfillset(&all);
    posix_spawnattr_setsigmask(&attr, &none);
    posix_spawnattr_setsigdefault(&attr, &all);
    posix_spawnattr_setpgroup(&attr, 0);
    posix_spawnattr_setflags(
        &attr, POSIX_SPAWN_SETPGROUP | POSIX_SPAWN_SETSIGMASK | POSIX_SPAWN_SETSIGDEF);
    auto argp = pointers(argv);
    auto envp = pointers(env);
    pid_t pid = -1;
    const int rc = ::posix_spawnp(&pid, argp[0], &actions, &attr, argp.data(), envp.data());
    posix_spawnattr_destroy(&attr);
    posix_spawn_file_actions_destroy(&actions);
    if (rc != 0) {
        run.launch_error = "cannot run " + argv[0] + ": " + std::generic_category().message(rc);
        return -1;
    }
    return pid;
}

// Waits for `pid` until `deadline`; false when it was still running then.
bool reap(pid_t pid, steady::time_point deadline, CommandRun& run) {
    for (;;) {
        int status = 0;
        const pid_t done = ::waitpid(pid, &status, WNOHANG);
        if (done == pid) {
            if (WIFEXITED(status)) run.exit_code = WEXITSTATUS(status);
            if (WIFSIGNALED(status)) run.signal = WTERMSIG(status);
            return true;
        }
        if (done < 0 && errno != EINTR) return true;
        if (steady::now() >= deadline) return false;
        ::usleep(10'000);  // its output has ended: it is exiting
    }
}

}  // namespace

bool RunningCommands::add(pid_t group) {
    const std::lock_guard lock(mutex_);
    if (stopped_) return false;
    groups_.insert(group);
    return true;
}

void RunningCommands::remove(pid_t group) {
    const std::lock_guard lock(mutex_);
    groups_.erase(group);
}

bool RunningCommands::stopped() const {
    const std::lock_guard lock(mutex_);
    return stopped_;
}

void RunningCommands::stop() {
    {
        const std::lock_guard lock(mutex_);
        stopped_ = true;
        for (const pid_t group : groups_) ::kill(-group, SIGTERM);
    }
    const steady::time_point deadline = steady::now() + kStopGrace;
    for (;;) {
        {
            const std::lock_guard lock(mutex_);
            if (groups_.empty()) return;
            if (steady::now() >= deadline) {
                for (const pid_t group : groups_) ::kill(-group, SIGKILL);
                return;
            }
        }
        std::this_thread::sleep_for(std::chrono::milliseconds(20));
    }
}

bool user_manager_reachable() {
    const char* runtime = std::getenv("XDG_RUNTIME_DIR");
    if (std::getenv("INVOCATION_ID") == nullptr || runtime == nullptr) return false;
    std::error_code ec;
    if (!std::filesystem::exists(std::filesystem::path(runtime) / "systemd" / "private", ec))
        return false;
    return proto::find_program_on_path("systemd-run", true).has_value();
}

std::vector<std::string> launch_argv(const TokenCommand& command, bool through_user_manager,
                                     const std::vector<std::string>& environment_names) {
    if (!through_user_manager) return command.argv;
    std::vector<std::string> argv{
        "systemd-run", "--user",    "--pipe",
        "--wait",      "--collect", "--quiet",
        "--same-dir",  "-p",        "RuntimeMaxSec=" + std::to_string(command.timeout.count())};
    for (const std::string& name : environment_names) {
        argv.emplace_back("-E");
        argv.push_back(name);  // the value is taken from systemd-run's environment
    }
    argv.emplace_back("--");
    argv.insert(argv.end(), command.argv.begin(), command.argv.end());
    return argv;
}

CommandRun run_token_command(const TokenCommand& command, RunningCommands* running) {
    CommandRun run;
    if (running != nullptr && running->stopped()) {
        run.launch_error = "not run: hostkeeperd is stopping";
        return run;
    }
    std::vector<std::string> env = command_environment();
    const bool via_manager = user_manager_reachable();
    std::vector<std::string> argv = launch_argv(
        command, via_manager, via_manager ? environment_names(env) : std::vector<std::string>{});
    std::array<int, 2> out{-1, -1};
    std::array<int, 2> err{-1, -1};
    if (::pipe2(out.data(), O_CLOEXEC) != 0 || ::pipe2(err.data(), O_CLOEXEC) != 0) {
        run.launch_error =
            std::string("cannot make a pipe: ") + std::generic_category().message(errno);
        for (const int fd : {out[0], out[1], err[0], err[1]})
            if (fd >= 0) ::close(fd);
        return run;
    }
    proto::UniqueFd out_read(out[0]);
    proto::UniqueFd err_read(err[0]);
    proto::UniqueFd out_write(out[1]);
    proto::UniqueFd err_write(err[1]);
    const steady::time_point deadline = steady::now() + command.timeout;
    const pid_t pid = start(argv, env, out_write.get(), err_write.get(), run);
    if (pid < 0) return run;
    if (running != nullptr && !running->add(pid)) ::kill(-pid, SIGTERM);
    // Our copies of the write ends close before reading, so the output ends
    // when the command's own copies do.
    out_write = proto::UniqueFd(-1);
    err_write = proto::UniqueFd(-1);
    Capture capture(std::move(out_read), std::move(err_read), run);
    const bool read_all = capture.read_until(deadline);
    // Its output has ended (or is no longer read): the group is not signalled
    // after this, so never after the command is reaped and its pid reused.
    if (running != nullptr) running->remove(pid);
    if (!read_all || !reap(pid, deadline, run)) {
        run.timed_out = !run.too_much_output;
        ::kill(-pid, SIGKILL);
        int status = 0;
        while (::waitpid(pid, &status, 0) < 0 && errno == EINTR) {
        }
    }
    return run;
}

}  // namespace hostkeeper::daemon::credentials
