#pragma once
// Running the real binaries inside the throw-away world that
// tests/support/keyring-env.sh sets up (its own HOME, D-Bus bus and keyring).

#include <sys/types.h>

#include <chrono>
#include <filesystem>
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <vector>

namespace hostkeeper::it {

struct Result {
    int exit_code = -1;  // 128+N when killed by signal N
    std::string out;
    std::string err;
};

struct RunOptions {
    std::optional<std::string> input;                       // stdin text; else /dev/null
    std::map<std::string, std::optional<std::string>> env;  // overrides; nullopt unsets
    std::chrono::seconds timeout{60};
};

Result run(const std::vector<std::string>& argv, const RunOptions& options = {});

// A program started in the background (pid known), to wait for later.
struct Spawned {
    pid_t pid = -1;
    Result wait();
    // Whether it has not exited yet; leaves its status for wait().
    bool running() const;
    int out_fd = -1;  // memfds: captured output never touches the disk
    int err_fd = -1;
};
Spawned spawn(const std::vector<std::string>& argv, const RunOptions& options = {});

std::string bin(const std::string& name);  // the build's bin/NAME
std::filesystem::path test_root();         // $HK_TEST_ROOT
// A fresh directory for one test's socket: ROOT/run/tN (0700), and the socket path in it.
std::filesystem::path fresh_socket();

// hostkeeperd in the foreground for one test, on `socket`, logging to a file.
class Daemon {
  public:
    explicit Daemon(std::filesystem::path socket, std::vector<std::string> extra_args = {});
    Daemon(const Daemon&) = delete;
    Daemon& operator=(const Daemon&) = delete;
    ~Daemon();
    // SIGTERM and wait; the exit status.
    int stop();
    pid_t pid() const { return pid_; }
    const std::filesystem::path& socket() const { return socket_; }
    std::string log() const;

  private:
    std::filesystem::path socket_;
    std::filesystem::path log_;
    pid_t pid_ = -1;
};

// The helper, as Terraform runs it, against `socket`.
Result helper(const std::filesystem::path& socket, const std::vector<std::string>& args,
              const std::optional<std::string>& input = std::nullopt);

// Processes whose command line mentions hostkeeperd and `needle`.
std::vector<pid_t> daemons_matching(const std::string& needle);
bool process_alive(pid_t pid);
// The resident memory of `pid` in KiB (VmRSS), 0 when unknown.
long resident_kib(pid_t pid);
// Whether process `pid` runs with AddressSanitizer (libasan is mapped):
// then its resident size says nothing of its own memory (ASan's quarantine
// and redzones), and LeakSanitizer checks leaks instead. Asked of the
// process, since the test programs' own code is built without sanitizers.
bool address_sanitized(pid_t pid);
bool wait_until(const std::function<bool()>& condition, std::chrono::milliseconds limit);

std::string read_file(const std::filesystem::path& path);
bool is_root();

}  // namespace hostkeeper::it
