#include "harness.hpp"

#include <fcntl.h>
#include <signal.h>
#include <spawn.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <sstream>
#include <stdexcept>
#include <thread>

extern char** environ;

namespace hostkeeper::it {
namespace fs = std::filesystem;

namespace {

std::vector<std::string> environment_with(
    const std::map<std::string, std::optional<std::string>>& overrides) {
    std::map<std::string, std::string> env;
    for (char** e = environ; *e != nullptr; ++e) {
        const std::string entry(*e);
        const auto eq = entry.find('=');
        if (eq != std::string::npos) env[entry.substr(0, eq)] = entry.substr(eq + 1);
    }
    for (const auto& [key, value] : overrides) {
        if (value) {
            env[key] = *value;
        } else {
            env.erase(key);
        }
    }
    std::vector<std::string> out;
    for (const auto& [key, value] : env) out.push_back(key + "=" + value);
    return out;
}

std::vector<char*> pointers(std::vector<std::string>& strings) {
    std::vector<char*> out;
    for (auto& s : strings) out.push_back(s.data());
    out.push_back(nullptr);
    return out;
}

std::atomic<int> counter{0};

std::string drain(int fd) {
    std::string text;
    ::lseek(fd, 0, SEEK_SET);
    char buffer[8192];
    ssize_t n = 0;
    while ((n = ::read(fd, buffer, sizeof buffer)) > 0)
        text.append(buffer, static_cast<std::size_t>(n));
    ::close(fd);
    return text;
}

Result collect(Spawned& spawned, int status) {
    Result result;
    result.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
    result.out = drain(spawned.out_fd);
    result.err = drain(spawned.err_fd);
    return result;
}

}  // namespace

fs::path test_root() {
    const char* root = std::getenv("HK_TEST_ROOT");
    if (root == nullptr)
        throw std::runtime_error("run the integration tests through tests/support/keyring-env.sh");
    return root;
}

std::string bin(const std::string& name) {
    // The build puts every program, this one too, in one directory.
    static const fs::path dir = fs::read_symlink("/proc/self/exe").parent_path();
    return (dir / name).string();
}

std::string read_file(const fs::path& path) {
    std::ifstream in(path);
    std::ostringstream text;
    text << in.rdbuf();
    return text.str();
}

bool is_root() {
    return ::geteuid() == 0;
}

long resident_kib(pid_t pid) {
    std::ifstream status("/proc/" + std::to_string(pid) + "/status");
    std::string line;
    while (std::getline(status, line)) {
        if (line.rfind("VmRSS:", 0) == 0) return std::atol(line.c_str() + 6);
    }
    return 0;
}

bool address_sanitized(pid_t pid) {
    std::ifstream maps("/proc/" + std::to_string(pid) + "/maps");
    std::string line;
    while (std::getline(maps, line)) {
        if (line.find("/libasan.so") != std::string::npos) return true;
    }
    return false;
}

Spawned spawn(const std::vector<std::string>& argv, const RunOptions& options) {
    Spawned spawned;
    spawned.out_fd = ::memfd_create("hk-test-out", MFD_CLOEXEC);
    spawned.err_fd = ::memfd_create("hk-test-err", MFD_CLOEXEC);
    // Standard input through a pipe, never a file: tests check that no token
    // reaches the disk, and must not put one there themselves.
    int in_pipe[2] = {-1, -1};
    posix_spawn_file_actions_t actions;
    posix_spawn_file_actions_init(&actions);
    if (options.input) {
        if (::pipe2(in_pipe, O_CLOEXEC) != 0) throw std::runtime_error("pipe");
        posix_spawn_file_actions_adddup2(&actions, in_pipe[0], 0);
    } else {
        posix_spawn_file_actions_addopen(&actions, 0, "/dev/null", O_RDONLY, 0);
    }
    posix_spawn_file_actions_adddup2(&actions, spawned.out_fd, 1);
    posix_spawn_file_actions_adddup2(&actions, spawned.err_fd, 2);
    std::vector<std::string> args = argv;
    std::vector<std::string> env = environment_with(options.env);
    auto argp = pointers(args);
    auto envp = pointers(env);
    const int rc =
        ::posix_spawn(&spawned.pid, args[0].c_str(), &actions, nullptr, argp.data(), envp.data());
    posix_spawn_file_actions_destroy(&actions);
    if (options.input) {
        ::close(in_pipe[0]);
        // A writer thread: the input may be larger than the pipe's buffer.
        std::thread([fd = in_pipe[1], text = *options.input] {
            std::size_t done = 0;
            while (done < text.size()) {
                const ssize_t n = ::write(fd, text.data() + done, text.size() - done);
                if (n <= 0) break;
                done += static_cast<std::size_t>(n);
            }
            ::close(fd);
        }).detach();
    }
    if (rc != 0) throw std::runtime_error("cannot run " + args[0] + ": " + std::strerror(rc));
    return spawned;
}

Result Spawned::wait() {
    int status = 0;
    ::waitpid(pid, &status, 0);
    return collect(*this, status);
}

bool Spawned::running() const {
    siginfo_t info{};
    if (::waitid(P_PID, static_cast<id_t>(pid), &info, WEXITED | WNOHANG | WNOWAIT) != 0)
        return false;
    return info.si_pid == 0;
}

Result run(const std::vector<std::string>& argv, const RunOptions& options) {
    Spawned spawned = spawn(argv, options);
    const auto deadline = std::chrono::steady_clock::now() + options.timeout;
    while (true) {
        int status = 0;
        const pid_t done = ::waitpid(spawned.pid, &status, WNOHANG);
        if (done == spawned.pid) return collect(spawned, status);
        if (std::chrono::steady_clock::now() > deadline) {
            ::kill(spawned.pid, SIGKILL);
            Result result = spawned.wait();
            result.err +=
                "\n[harness: killed after " + std::to_string(options.timeout.count()) + " s]";
            return result;
        }
        std::this_thread::sleep_for(std::chrono::milliseconds(2));
    }
}

fs::path fresh_socket() {
    const fs::path dir = test_root() / "run" / ("t" + std::to_string(counter++));
    fs::create_directories(dir.parent_path());
    fs::create_directory(dir);
    fs::permissions(dir, fs::perms::owner_all, fs::perm_options::replace);
    return dir / "socket";
}

Daemon::Daemon(fs::path socket, std::vector<std::string> extra_args) : socket_(std::move(socket)) {
    log_ = socket_.parent_path() / "daemon.log";
    std::vector<std::string> argv{bin("hostkeeperd"), "--socket", socket_.string(), "--log-level",
                                  "trace"};
    argv.insert(argv.end(), extra_args.begin(), extra_args.end());
    std::vector<std::string> env = environment_with({});
    auto argp = pointers(argv);
    auto envp = pointers(env);
    posix_spawn_file_actions_t actions;
    posix_spawn_file_actions_init(&actions);
    posix_spawn_file_actions_addopen(&actions, 0, "/dev/null", O_RDONLY, 0);
    posix_spawn_file_actions_addopen(&actions, 1, log_.c_str(), O_WRONLY | O_CREAT | O_APPEND,
                                     0600);
    posix_spawn_file_actions_addopen(&actions, 2, log_.c_str(), O_WRONLY | O_CREAT | O_APPEND,
                                     0600);
    const int rc = ::posix_spawn(&pid_, argp[0], &actions, nullptr, argp.data(), envp.data());
    posix_spawn_file_actions_destroy(&actions);
    if (rc != 0) throw std::runtime_error("cannot start hostkeeperd");
    if (!wait_until([&] { return fs::exists(socket_) || !process_alive(pid_); },
                    std::chrono::seconds(10)) ||
        !process_alive(pid_)) {
        throw std::runtime_error("hostkeeperd did not start; log:\n" + log());
    }
}

Daemon::~Daemon() {
    if (pid_ > 0) stop();
}

int Daemon::stop() {
    if (pid_ <= 0) return -1;
    ::kill(pid_, SIGTERM);
    int status = 0;
    ::waitpid(pid_, &status, 0);
    pid_ = -1;
    return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
}

std::string Daemon::log() const {
    return read_file(log_);
}

Result helper(const fs::path& socket, const std::vector<std::string>& args,
              const std::optional<std::string>& input) {
    std::vector<std::string> argv{bin("terraform-credentials-hostkeeper"),
                                  "--socket=" + socket.string(), "--timeout=20"};
    argv.insert(argv.end(), args.begin(), args.end());
    RunOptions options;
    options.input = input;
    return run(argv, options);
}

std::vector<pid_t> daemons_matching(const std::string& needle) {
    std::vector<pid_t> found;
    for (const auto& entry : fs::directory_iterator("/proc")) {
        const std::string name = entry.path().filename();
        if (name.find_first_not_of("0123456789") != std::string::npos) continue;
        std::string cmdline = read_file(entry.path() / "cmdline");
        for (char& c : cmdline) {
            if (c == '\0') c = ' ';
        }
        if (cmdline.find("hostkeeperd") != std::string::npos &&
            cmdline.find(needle) != std::string::npos) {
            // Zombies are gone for our purposes.
            const std::string stat = read_file(entry.path() / "stat");
            const auto close = stat.rfind(')');
            if (close != std::string::npos && stat.size() > close + 2 && stat[close + 2] == 'Z')
                continue;
            found.push_back(std::stoi(name));
        }
    }
    return found;
}

bool process_alive(pid_t pid) {
    if (::kill(pid, 0) != 0) return false;
    const std::string stat = read_file("/proc/" + std::to_string(pid) + "/stat");
    const auto close = stat.rfind(')');
    return !(close != std::string::npos && stat.size() > close + 2 && stat[close + 2] == 'Z');
}

bool wait_until(const std::function<bool()>& condition, std::chrono::milliseconds limit) {
    const auto deadline = std::chrono::steady_clock::now() + limit;
    while (!condition()) {
        if (std::chrono::steady_clock::now() > deadline) return false;
        std::this_thread::sleep_for(std::chrono::milliseconds(10));
    }
    return true;
}

}  // namespace hostkeeper::it
