#include "daemon/credentials/command_runner.hpp"

#include <fcntl.h>
#include <poll.h>
#include <pwd.h>
#include <signal.h>
#include <spawn.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <atomic>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <optional>
#include <set>
#include <sstream>
#include <string_view>
#include <system_error>
#include <thread>

#include "daemon/credentials/command_output.hpp"
#include "daemon/credentials/file_trust.hpp"
#include "proto/program_search.hpp"
#include "proto/unique_fd.hpp"

namespace hostkeeper::daemon::credentials {
namespace {

using steady = std::chrono::steady_clock;
constexpr std::size_t kMaxErrorLine = 512;
// How long a killed command's process group may take to be gone.
constexpr std::chrono::seconds kGroupGone{2};
// How long its transient unit may take to stop (SIGTERM, then SIGKILL after
// kUnitStopGrace), and how long systemctl is given for that.
constexpr std::chrono::seconds kUnitStopGrace{2};
constexpr std::chrono::seconds kSystemctlTime{15};
constexpr const char* kDefaultPath = "/usr/local/bin:/usr/bin:/bin";

const char* daemon_path() {
    const char* path = std::getenv("PATH");
    return path != nullptr ? path : kDefaultPath;
}

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

// Starts `program` with argv in a process group of its own; its pid, or -1
// with run.launch_error set. `in`, `out`, `err`: -1 for /dev/null.
pid_t start(const std::string& program, std::vector<std::string>& argv,
            std::vector<std::string>& env, int in, int out, int err, CommandRun& run) {
    posix_spawn_file_actions_t actions;
    posix_spawn_file_actions_init(&actions);
    if (in >= 0)
        posix_spawn_file_actions_adddup2(&actions, in, STDIN_FILENO);
    else
        posix_spawn_file_actions_addopen(&actions, STDIN_FILENO, "/dev/null", O_RDONLY, 0);
    if (out >= 0)
        posix_spawn_file_actions_adddup2(&actions, out, STDOUT_FILENO);
    else
        posix_spawn_file_actions_addopen(&actions, STDOUT_FILENO, "/dev/null", O_WRONLY, 0);
    if (err >= 0)
        posix_spawn_file_actions_adddup2(&actions, err, STDERR_FILENO);
    else
        posix_spawn_file_actions_addopen(&actions, STDERR_FILENO, "/dev/null", O_WRONLY, 0);
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
    const int rc = ::posix_spawn(&pid, program.c_str(), &actions, &attr, argp.data(), envp.data());
    posix_spawnattr_destroy(&attr);
    posix_spawn_file_actions_destroy(&actions);
    if (rc != 0) {
        run.launch_error = "cannot run " + program + ": " + std::generic_category().message(rc);
        return -1;
    }
    return pid;
}

// A file holding `input`, read from its start (memfd: never on disk); -1
// for none, or with run.launch_error set when it cannot be made.
proto::UniqueFd input_file(const std::string& input, CommandRun& run) {
    if (input.empty()) return proto::UniqueFd(-1);
    proto::UniqueFd fd(::memfd_create("hostkeeper-input", MFD_CLOEXEC));
    std::size_t written = 0;
    int error = fd.get() < 0 ? errno : 0;
    while (error == 0 && written < input.size()) {
        const ssize_t n = ::write(fd.get(), input.data() + written, input.size() - written);
        if (n < 0 && errno == EINTR) continue;
        if (n < 0) error = errno;
        if (n == 0) error = ENOSPC;  // a file that takes nothing more is full
        if (n > 0) written += static_cast<std::size_t>(n);
    }
    if (error == 0 && ::lseek(fd.get(), 0, SEEK_SET) != 0) error = errno;
    if (error != 0) {
        run.launch_error =
            std::string("cannot hand the command its input: ") + std::strerror(error);
        return proto::UniqueFd(-1);
    }
    return fd;
}

// Whether a process of the process group `group` is still there; zombies,
// which hold nothing and wait for their parent, aside.
bool group_alive(pid_t group) {
    if (::kill(-group, 0) != 0 && errno == ESRCH) return false;
    std::error_code ec;
    for (const auto& entry : std::filesystem::directory_iterator("/proc", ec)) {
        const std::string name = entry.path().filename().string();
        if (name.find_first_not_of("0123456789") != std::string::npos) continue;
        std::ifstream in(entry.path() / "stat");
        std::string line;
        if (!std::getline(in, line)) continue;
        // "pid (comm) state ppid pgrp ...": comm may hold anything, up to the last ')'.
        const auto close = line.rfind(')');
        if (close == std::string::npos) continue;
        char state = 0;
        long parent = 0;
        long pgrp = 0;
        std::istringstream fields(line.substr(close + 1));
        if (!(fields >> state >> parent >> pgrp)) continue;
        if (pgrp == group && state != 'Z' && state != 'X') return true;
    }
    return false;
}

// SIGKILL to every process of `group`, then waits until none is left, at
// most kGroupGone; false when some are.
bool end_group(pid_t group) {
    ::kill(-group, SIGKILL);
    const steady::time_point deadline = steady::now() + kGroupGone;
    while (group_alive(group)) {
        if (steady::now() >= deadline) return false;
        ::kill(-group, SIGKILL);
        std::this_thread::sleep_for(std::chrono::milliseconds(10));
    }
    return true;
}

// Runs `systemctl --user ARGS...` with no output, at most kSystemctlTime;
// its exit status, or -1.
int systemctl(std::vector<std::string> args) {
    const std::optional<std::filesystem::path> program =
        proto::find_program_on_path("systemctl", true);
    if (!program) return -1;
    std::vector<std::string> argv{"systemctl", "--user"};
    argv.insert(argv.end(), args.begin(), args.end());
    std::vector<std::string> env = command_environment();
    CommandRun ignored;
    const pid_t pid = start(program->string(), argv, env, -1, -1, -1, ignored);
    if (pid < 0) return -1;
    const steady::time_point deadline = steady::now() + kSystemctlTime;
    int status = 0;
    for (;;) {
        const pid_t done = ::waitpid(pid, &status, WNOHANG);
        if (done == pid) return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
        if (done < 0 && errno != EINTR) return -1;
        if (steady::now() >= deadline) {
            ::kill(-pid, SIGKILL);
            while (::waitpid(pid, &status, 0) < 0 && errno == EINTR) {
            }
            return -1;
        }
        std::this_thread::sleep_for(std::chrono::milliseconds(10));
    }
}

// Stops the transient unit `unit` and waits until it is (systemd ends every
// process of its cgroup first); false when that cannot be confirmed.
bool stop_unit(const std::string& unit) {
    const int status = systemctl({"stop", "--", unit});
    // 5: no such unit (it ended, was collected, or was never made).
    return status == 0 || status == 5;
}

// A name for the next command's transient unit, unique on this user manager.
std::string next_unit_name() {
    static std::atomic<unsigned long> count{0};
    return "hostkeeper-token-command-" + std::to_string(::getpid()) + "-" +
           std::to_string(++count) + ".service";
}

// hostkeeperd's own executable, for the transient unit to run.
std::string self_executable() {
    std::error_code ec;
    const std::filesystem::path self = std::filesystem::read_symlink("/proc/self/exe", ec);
    return ec ? std::string() : self.string();
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

bool RunningCommands::add(pid_t group, const std::string& unit) {
    const std::lock_guard lock(mutex_);
    if (stopped_) return false;
    groups_[group] = unit;
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
    std::vector<std::string> units;
    {
        const std::lock_guard lock(mutex_);
        stopped_ = true;
        for (const auto& [group, unit] : groups_) {
            ::kill(-group, SIGTERM);
            if (!unit.empty()) units.push_back(unit);
        }
    }
    // The command itself runs in the unit, not in systemd-run's group.
    for (const std::string& unit : units) systemctl({"stop", "--no-block", "--", unit});
    const steady::time_point deadline = steady::now() + kStopGrace;
    for (;;) {
        {
            const std::lock_guard lock(mutex_);
            if (groups_.empty()) return;
            if (steady::now() >= deadline) {
                for (const auto& [group, unit] : groups_) ::kill(-group, SIGKILL);
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

std::vector<std::string> launch_argv(const TokenCommand& command, const std::string& self,
                                     const std::string& unit,
                                     const std::vector<std::string>& environment_names) {
    std::vector<std::string> argv{
        "systemd-run", "--user",
        "--pipe",      "--wait",
        "--collect",   "--quiet",
        "--same-dir",  "--unit=" + unit,
        "-p",          "RuntimeMaxSec=" + std::to_string(command.timeout.count()),
        "-p",          "KillMode=control-group",
        "-p",          "TimeoutStopSec=" + std::to_string(kUnitStopGrace.count())};
    for (const std::string& name : environment_names) {
        argv.emplace_back("-E");
        argv.push_back(name);  // the value is taken from systemd-run's environment
    }
    argv.emplace_back("--");
    argv.push_back(self);
    argv.emplace_back(kExecTrustedOption);
    argv.insert(argv.end(), command.argv.begin(), command.argv.end());
    return argv;
}

int exec_trusted_command(int argc, char** argv) {
    if (argc < 1 || argv[0] == nullptr) {
        std::fprintf(stderr, "%sno program given\n", kRefusedPrefix);
        return kRefusedExit;
    }
    const TrustedProgram program = find_trusted_program(argv[0], daemon_path());
    if (!program.path) {
        std::fprintf(stderr, "%s%s\n", kRefusedPrefix, program.refused.c_str());
        return kRefusedExit;
    }
    ::execv(program.path->c_str(), argv);
    std::fprintf(stderr, "hostkeeperd: cannot run %s: %s\n", program.path->c_str(),
                 std::strerror(errno));
    return 127;
}

CommandRun run_token_command(const TokenCommand& command, RunningCommands* running) {
    CommandRun run;
    if (running != nullptr && running->stopped()) {
        run.launch_error = "not run: hostkeeperd is stopping";
        return run;
    }
    std::vector<std::string> env = command_environment();
    const bool via_manager = user_manager_reachable();
    std::string program;
    std::string unit;
    std::vector<std::string> argv;
    if (via_manager) {
        // The program is found and checked in the unit, outside this
        // process's user namespace, where its owners show as they are.
        program = proto::find_program_on_path("systemd-run", true).value_or("").string();
        const std::string self = self_executable();
        if (self.empty() || program.empty()) {
            run.launch_error = "cannot run systemd-run with hostkeeperd's own executable";
            return run;
        }
        unit = next_unit_name();
        argv = launch_argv(command, self, unit, environment_names(env));
    } else {
        const TrustedProgram found =
            find_trusted_program(command.argv.empty() ? "" : command.argv.front(), daemon_path());
        if (!found.path) {
            run.launch_error = "not run: " + found.refused;
            return run;
        }
        program = found.path->string();
        argv = command.argv;
    }
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
    const proto::UniqueFd in = input_file(command.input, run);
    if (!command.input.empty() && in.get() < 0) return run;
    const pid_t pid = start(program, argv, env, in.get(), out_write.get(), err_write.get(), run);
    if (pid < 0) return run;
    if (running != nullptr && !running->add(pid, unit)) {
        ::kill(-pid, SIGTERM);
        if (!unit.empty()) systemctl({"stop", "--no-block", "--", unit});
    }
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
        // The group leader is not reaped yet, so the group's id is still its own.
        if (!end_group(pid))
            run.left_behind = "processes of its group " + std::to_string(pid) + " remain";
        int status = 0;
        while (::waitpid(pid, &status, 0) < 0 && errno == EINTR) {
        }
        if (!unit.empty() && !stop_unit(unit))
            run.left_behind = "its transient unit " + unit + " could not be stopped";
    }
    if (via_manager && run.exit_code == kRefusedExit &&
        run.first_error_line.rfind(kRefusedPrefix, 0) == 0) {
        run.launch_error =
            "not run: " + run.first_error_line.substr(std::string_view(kRefusedPrefix).size());
        run.exit_code = -1;
    }
    return run;
}

}  // namespace hostkeeper::daemon::credentials
