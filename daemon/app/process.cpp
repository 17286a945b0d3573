#include "daemon/app/process.hpp"

#include <malloc.h>
#include <spdlog/sinks/stdout_sinks.h>
#include <spdlog/spdlog.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <syslog.h>
#include <systemd/sd-journal.h>
#include <unistd.h>

#include <cstdlib>

#include "daemon/app/printable_log.hpp"

namespace hostkeeper::daemon::app {

void disable_core_dumps() {
    const rlimit none{0, 0};
    ::setrlimit(RLIMIT_CORE, &none);
    ::prctl(PR_SET_DUMPABLE, 0, 0, 0, 0);
}

void tune_allocator() {
    // Blocks up to 1 MiB (every common reply) come from the heap, and up to
    // 2 MiB of free heap is kept rather than trimmed. Fixed values also stop
    // glibc's dynamic threshold from moving.
    ::mallopt(M_MMAP_THRESHOLD, 1024 * 1024);
    ::mallopt(M_TRIM_THRESHOLD, 2 * 1024 * 1024);
}

void setup_logging(const std::string& level) {
    auto logger = spdlog::stderr_logger_mt("hostkeeperd");
    // Every message through the printable filter (printable_log.hpp).
    logger->set_formatter(std::make_unique<PrintableLogFormatter>(
        std::getenv("JOURNAL_STREAM") != nullptr ? "[%l] %v"
                                                 : "%Y-%m-%d %H:%M:%S.%e hostkeeperd[%P] [%l] %v"));
    spdlog::set_default_logger(logger);
    spdlog::set_level(spdlog::level::from_str(level));
    spdlog::flush_on(spdlog::level::trace);
}

void log_to_journal_if_possible() {
    const int fd = sd_journal_stream_fd("hostkeeperd", LOG_INFO, 0);
    if (fd < 0) return;
    ::dup2(fd, STDERR_FILENO);
    ::close(fd);
    ::setenv("JOURNAL_STREAM", "on-demand", 0);
}

StartupReport::~StartupReport() {
    if (fd_ >= 0) ::close(fd_);
}

void StartupReport::send(const std::string& line) {
    if (fd_ < 0) return;
    const std::string text = line + "\n";
    std::size_t done = 0;
    while (done < text.size()) {
        const ssize_t n = ::write(fd_, text.data() + done, text.size() - done);
        if (n <= 0) break;
        done += static_cast<std::size_t>(n);
    }
    ::close(fd_);
    fd_ = -1;
}

}  // namespace hostkeeper::daemon::app
