#pragma once
// Process-level setup of hostkeeperd: no core dumps, logging, the start-up
// report to whoever started it (helper pipe, systemd), journal output.

#include <string>

namespace hostkeeper::daemon::app {

// No core dumps, no ptrace by other processes of the user: a crash or a
// debugger must not write the cached tokens anywhere.
void disable_core_dumps();

// Keeps glibc's allocator from returning and re-faulting the heap on every
// large reply: a cached provider_versions answer (60 KB, built, framed and
// scrubbed per request) otherwise costs a trim and fresh page faults each
// time. tests/bench/registry.sh, 8 clients: 15,872/s (62.1 µs of daemon CPU
// per request) without, 35,854/s (25.2 µs) with.
void tune_allocator();

// spdlog to stderr at `level`; a terser format when stderr is the journal.
void setup_logging(const std::string& level);

// An on-demand daemon was started with stderr on /dev/null (never the
// client's pipes): send it to the journal when there is one.
void log_to_journal_if_possible();

// The one line the helper waits for on --ready-fd ("ready", "running" or
// "error MESSAGE"); written at most once, then the descriptor is closed.
class StartupReport {
  public:
    explicit StartupReport(int fd) : fd_(fd) {}
    StartupReport(const StartupReport&) = delete;
    StartupReport& operator=(const StartupReport&) = delete;
    ~StartupReport();
    void send(const std::string& line);
    bool wanted() const { return fd_ >= 0; }

  private:
    int fd_;
};

}  // namespace hostkeeper::daemon::app
