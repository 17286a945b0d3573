// hostkeeper-portd: the registry port's service. systemd holds the port
// (hostkeeper-port.socket, hostkeeper-port-ipv6.socket) and the Unix socket
// the users' daemons register on, and hands them over at start; this process,
// unprivileged, passes each TCP connection to the daemon of the user at its
// client end (daemon/portd/port_service.hpp).
#include <spdlog/sinks/stdout_sinks.h>
#include <spdlog/spdlog.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <systemd/sd-daemon.h>
#include <unistd.h>

#include <boost/asio/io_context.hpp>
#include <boost/asio/signal_set.hpp>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <exception>
#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "daemon/portd/port_service.hpp"
#include "proto/version.hpp"

namespace {

namespace portd = hostkeeper::daemon::portd;

constexpr const char* kUsage =
    "usage: hostkeeper-portd [--version | --help]\n"
    "\n"
    "The registry port's service: systemd starts it with the sockets of\n"
    "hostkeeper-port.socket and hostkeeper-port-ipv6.socket (one Unix socket and\n"
    "one or two loopback TCP listeners on one port). Each TCP connection goes to\n"
    "the hostkeeperd of the user whose process opened it, registered on the Unix\n"
    "socket. It is not meant to be run by hand.\n";

// Exit statuses: 2 for sockets that do not fit, 1 for anything else.
constexpr int kBadSockets = 2;

void setup_logging() {
    auto logger = spdlog::stderr_logger_mt("hostkeeper-portd");
    // Under systemd the journal adds time, name and pid itself.
    if (std::getenv("JOURNAL_STREAM") != nullptr) {
        logger->set_pattern("[%l] %v");
    } else {
        logger->set_pattern("%Y-%m-%d %H:%M:%S.%e hostkeeper-portd[%P] [%l] %v");
    }
    spdlog::set_default_logger(logger);
    spdlog::set_level(spdlog::level::info);
    spdlog::flush_on(spdlog::level::info);
}

// No core dumps: the unit sets LimitCORE=0 already (and forbids setrlimit),
// so the limit is set only where it is not.
void disable_core_dumps() {
    ::prctl(PR_SET_DUMPABLE, 0, 0, 0, 0);
    rlimit core{};
    if (::getrlimit(RLIMIT_CORE, &core) == 0 && (core.rlim_cur != 0 || core.rlim_max != 0)) {
        const rlimit none{0, 0};
        ::setrlimit(RLIMIT_CORE, &none);
    }
}

struct Sockets {
    std::vector<int> tcp;
    std::vector<int> unix_listeners;
    std::string problem;  // empty when they fit
};

// The sockets systemd passed: exactly one listening Unix stream socket and
// one or two listening TCP sockets, nothing else.
Sockets classify_sockets() {
    Sockets out;
    const int n = sd_listen_fds(1);
    if (n < 0) {
        out.problem = std::string("sd_listen_fds: ") + std::strerror(-n);
        return out;
    }
    for (int fd = SD_LISTEN_FDS_START; fd < SD_LISTEN_FDS_START + n; ++fd) {
        if (sd_is_socket_unix(fd, SOCK_STREAM, 1, nullptr, 0) > 0) {
            out.unix_listeners.push_back(fd);
        } else if (sd_is_socket_inet(fd, AF_UNSPEC, SOCK_STREAM, 1, 0) > 0) {
            out.tcp.push_back(fd);
        } else {
            out.problem = "descriptor " + std::to_string(fd) +
                          " is neither a listening Unix stream socket nor a listening TCP socket";
            return out;
        }
    }
    if (out.unix_listeners.size() != 1 || out.tcp.empty() || out.tcp.size() > 2) {
        out.problem = "expected from systemd one Unix listener and one or two TCP listeners, got " +
                      std::to_string(out.unix_listeners.size()) + " and " +
                      std::to_string(out.tcp.size()) +
                      " (start it through hostkeeper-port.socket, not by hand)";
    }
    return out;
}

}  // namespace

int main(int argc, char** argv) {
    for (int i = 1; i < argc; ++i) {
        const std::string_view arg = argv[i];
        if (arg == "--version") {
            std::printf("hostkeeper-portd %s\n", hostkeeper::proto::product_version());
            return 0;
        }
        if (arg == "--help" || arg == "-h") {
            std::fputs(kUsage, stdout);
            return 0;
        }
        std::fprintf(stderr, "hostkeeper-portd: unknown argument '%s'\n%s", argv[i], kUsage);
        return kBadSockets;
    }

    disable_core_dumps();
    std::signal(SIGPIPE, SIG_IGN);
    setup_logging();
    if (::geteuid() == 0) {
        spdlog::warn(
            "running as root: hostkeeper-port.service runs it as a dynamic unprivileged user; it "
            "needs no privileges");
    }

    const Sockets sockets = classify_sockets();
    if (!sockets.problem.empty()) {
        spdlog::error("{}", sockets.problem);
        return kBadSockets;
    }
    boost::asio::io_context io(1);
    std::unique_ptr<portd::PortService> service;
    try {
        service =
            std::make_unique<portd::PortService>(io, sockets.tcp, sockets.unix_listeners.front());
    } catch (const std::exception& e) {
        spdlog::error("{}", e.what());
        return kBadSockets;
    }
    try {
        boost::asio::signal_set stop(io, SIGTERM, SIGINT);
        stop.async_wait([&io](const boost::system::error_code& ec, int signal) {
            if (ec) return;
            spdlog::info("{}: stopping", signal == SIGINT ? "SIGINT" : "SIGTERM");
            sd_notify(0, "STOPPING=1");
            io.stop();
        });
        boost::asio::signal_set report(io, SIGUSR1);
        std::function<void(const boost::system::error_code&, int)> on_report =
            [&](const boost::system::error_code& ec, int) {
                if (ec) return;
                service->log_counters();
                report.async_wait(on_report);
            };
        report.async_wait(on_report);
        service->start();
        spdlog::info("hostkeeper-portd {} serving port {} ({} TCP listener{}) as uid {}, pid {}",
                     hostkeeper::proto::product_version(), service->port(), sockets.tcp.size(),
                     sockets.tcp.size() == 1 ? "" : "s", ::geteuid(), ::getpid());
        sd_notify(0, "READY=1");
        io.run();
        service->log_counters();
        service.reset();  // before the signal sets and while the loop no longer runs
    } catch (const std::exception& e) {
        spdlog::error("{}", e.what());
        return 1;
    }
    spdlog::info("stopped");
    return 0;
}
