#include "helper/client/launcher.hpp"

#include <fcntl.h>
#include <poll.h>
#include <spawn.h>
#include <sys/file.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <csignal>
#include <cstdlib>
#include <cstring>
#include <string>
#include <thread>
#include <vector>

#include "helper/client/unit_state.hpp"
#include "proto/error.hpp"
#include "proto/program_search.hpp"

namespace hostkeeper::helper::client {
namespace fs = std::filesystem;
using proto::Error;
using proto::ErrorCode;

namespace {

constexpr int kReadyFd = 3;

class FileDescriptor {
  public:
    explicit FileDescriptor(int fd = -1) : fd_(fd) {}
    FileDescriptor(FileDescriptor&& other) noexcept : fd_(other.fd_) { other.fd_ = -1; }
    FileDescriptor& operator=(FileDescriptor&&) = delete;
    FileDescriptor(const FileDescriptor&) = delete;
    FileDescriptor& operator=(const FileDescriptor&) = delete;
    ~FileDescriptor() {
        if (fd_ >= 0) ::close(fd_);
    }
    int get() const { return fd_; }
    void reset(int fd = -1) {
        if (fd_ >= 0) ::close(fd_);
        fd_ = fd;
    }

  private:
    int fd_;
};

std::string errno_text(const char* what) {
    return std::string(what) + ": " + std::strerror(errno);
}

// Holds spawn.lock in the socket's directory, waiting for it up to the deadline.
FileDescriptor lock_spawn(const fs::path& directory, const Deadline& deadline) {
    const fs::path lock_path = directory / "spawn.lock";
    FileDescriptor fd(::open(lock_path.c_str(), O_RDWR | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0600));
    if (fd.get() < 0) throw NoDaemon(errno_text(("cannot open " + lock_path.string()).c_str()));
    while (::flock(fd.get(), LOCK_EX | LOCK_NB) != 0) {
        if (errno != EWOULDBLOCK && errno != EINTR) throw NoDaemon(errno_text("flock spawn.lock"));
        if (deadline.expired()) {
            throw Error(ErrorCode::timeout,
                        "timed out waiting for another process to start hostkeeperd");
        }
        std::this_thread::sleep_for(std::chrono::milliseconds(2));
    }
    return fd;
}

// Reads the daemon's one start-up line: "ready", "running" or "error MESSAGE".
std::string read_ready_line(int fd, const Deadline& deadline) {
    std::string line;
    char buffer[512];
    while (line.find('\n') == std::string::npos && line.size() < 4096) {
        pollfd pfd{fd, POLLIN, 0};
        const int rc = ::poll(&pfd, 1, deadline.remaining_ms());
        if (rc == 0) throw Error(ErrorCode::timeout, "timed out waiting for hostkeeperd to start");
        if (rc < 0) {
            if (errno == EINTR) continue;
            throw NoDaemon(errno_text("poll"));
        }
        const ssize_t n = ::read(fd, buffer, sizeof buffer);
        if (n < 0 && errno == EINTR) continue;
        if (n <= 0) break;
        line.append(buffer, static_cast<std::size_t>(n));
    }
    return line.substr(0, line.find('\n'));
}

std::string describe_exit(pid_t pid) {
    int status = 0;
    if (::waitpid(pid, &status, 0) != pid) return "it exited";
    if (WIFEXITED(status)) return "it exited with status " + std::to_string(WEXITSTATUS(status));
    if (WIFSIGNALED(status)) return "it was killed by signal " + std::to_string(WTERMSIG(status));
    return "it exited";
}

void start_daemon(const fs::path& socket, const Deadline& deadline) {
    const fs::path daemon = find_daemon_executable();
    int fds[2];
    if (::pipe2(fds, O_CLOEXEC) != 0) throw NoDaemon(errno_text("pipe"));
    FileDescriptor read_end(fds[0]);
    FileDescriptor write_end(fds[1]);
    if (write_end.get() == kReadyFd) {  // dup2 onto itself would keep FD_CLOEXEC
        write_end.reset(::fcntl(kReadyFd, F_DUPFD_CLOEXEC, 10));
        if (write_end.get() < 0) throw NoDaemon(errno_text("fcntl"));
    }

    posix_spawn_file_actions_t actions;
    posix_spawn_file_actions_init(&actions);
    posix_spawn_file_actions_addopen(&actions, 0, "/dev/null", O_RDONLY, 0);
    // Never hand Terraform's stdout/stderr pipes to a long-lived process: the
    // client would wait for them to close. The daemon logs to the journal.
    posix_spawn_file_actions_addopen(&actions, 1, "/dev/null", O_WRONLY, 0);
    posix_spawn_file_actions_addopen(&actions, 2, "/dev/null", O_WRONLY, 0);
    posix_spawn_file_actions_adddup2(&actions, write_end.get(), kReadyFd);

    posix_spawnattr_t attributes;
    posix_spawnattr_init(&attributes);
    sigset_t none;
    sigset_t defaults;
    sigemptyset(&none);
    sigemptyset(&defaults);
    for (const int sig : {SIGPIPE, SIGINT, SIGTERM, SIGHUP, SIGCHLD}) sigaddset(&defaults, sig);
    posix_spawnattr_setsigmask(&attributes, &none);
    posix_spawnattr_setsigdefault(&attributes, &defaults);
    posix_spawnattr_setflags(&attributes,
                             POSIX_SPAWN_SETSID | POSIX_SPAWN_SETSIGMASK | POSIX_SPAWN_SETSIGDEF);

    std::string daemon_arg = daemon.string();
    std::string socket_arg = socket.string();
    std::string fd_arg = std::to_string(kReadyFd);
    std::vector<char*> argv{daemon_arg.data(),
                            const_cast<char*>("--on-demand"),
                            const_cast<char*>("--socket"),
                            socket_arg.data(),
                            const_cast<char*>("--ready-fd"),
                            fd_arg.data(),
                            nullptr};
    pid_t pid = -1;
    const int rc = ::posix_spawn(&pid, daemon.c_str(), &actions, &attributes, argv.data(), environ);
    posix_spawn_file_actions_destroy(&actions);
    posix_spawnattr_destroy(&attributes);
    if (rc != 0) throw NoDaemon("cannot start " + daemon.string() + ": " + std::strerror(rc));
    write_end.reset();  // only the daemon holds it now: EOF means it died

    const std::string line = read_ready_line(read_end.get(), deadline);
    if (line == "ready" || line == "running") return;
    if (line.rfind("error ", 0) == 0)
        throw NoDaemon("hostkeeperd could not start: " + line.substr(6));
    throw NoDaemon("hostkeeperd did not start (" + describe_exit(pid) +
                   "); run 'hostkeeperd --log-level debug' in a terminal to see why");
}

}  // namespace

fs::path find_daemon_executable() {
    std::error_code ec;
    const fs::path self = fs::read_symlink("/proc/self/exe", ec);
    if (!ec) {
        fs::path beside = self.parent_path() / "hostkeeperd";
        if (::access(beside.c_str(), X_OK) == 0) return beside;
    }
    // Only absolute PATH entries: the working directory never chooses the daemon.
    if (auto found = proto::find_program_on_path("hostkeeperd", true)) return *found;
    throw NoDaemon("cannot find hostkeeperd next to " +
                   (ec ? std::string("this program") : self.string()) + " or on PATH");
}

Connection connect_or_start(const proto::SocketLocation& location, const Deadline& deadline,
                            bool allow_start) {
    int error = 0;
    if (auto connection = Connection::open(location.socket, deadline, error))
        return std::move(*connection);
    if (!allow_start) {
        throw NoDaemon("hostkeeperd is not running (nothing answers at " +
                       location.socket.string() + ")");
    }
    if (error != ENOENT && error != ECONNREFUSED) {
        throw NoDaemon("cannot connect to " + location.socket.string() + ": " +
                       std::strerror(error));
    }
    proto::ensure_private_directory(location.directory, ::geteuid());
    const FileDescriptor lock = lock_spawn(location.directory, deadline);
    // Whoever held the lock before us may have started it.
    if (auto connection = Connection::open(location.socket, deadline, error))
        return std::move(*connection);
    warn_if_units_failed(
        location.socket);  // a failed hostkeeperd.socket is never replaced silently
    start_daemon(location.socket, deadline);
    if (auto connection = Connection::open(location.socket, deadline, error))
        return std::move(*connection);
    throw NoDaemon("hostkeeperd started but " + location.socket.string() +
                   " does not answer: " + std::strerror(error));
}

}  // namespace hostkeeper::helper::client
