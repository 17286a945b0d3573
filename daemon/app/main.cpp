// hostkeeperd: the composition root. Wires configuration, the socket, the
// keyring adapter, the services, the dispatcher and the server onto one
// io_context, each given what it needs as it is made; signals stop the server.

#include <spdlog/spdlog.h>
#include <systemd/sd-daemon.h>
#include <unistd.h>

#include <boost/asio/io_context.hpp>
#include <boost/asio/signal_set.hpp>
#include <boost/asio/thread_pool.hpp>
#include <chrono>
#include <csignal>
#include <functional>
#include <optional>

#include "daemon/app/config.hpp"
#include "daemon/app/process.hpp"
#include "daemon/archives/archive_store.hpp"
#include "daemon/backends/chosen_keyring.hpp"
#include "daemon/credentials/credential_service.hpp"
#include "daemon/credentials/keyring_items.hpp"
#include "daemon/discovery/discovery_service.hpp"
#include "daemon/handlers/config_error_handler.hpp"
#include "daemon/handlers/dispatcher.hpp"
#include "daemon/handlers/registry_port_requests.hpp"
#include "daemon/http/curl_http_client.hpp"
#include "daemon/registry/registry_service.hpp"
#include "daemon/registry_cache/cache_config.hpp"
#include "daemon/registry_cache/config_error_answer.hpp"
#include "daemon/registry_cache/port_link.hpp"
#include "daemon/registry_cache/registry_cache.hpp"
#include "daemon/server/http_listener.hpp"
#include "daemon/server/server.hpp"
#include "daemon/server/socket_owner.hpp"
#include "proto/paths.hpp"
#include "proto/port_link.hpp"
#include "proto/socket_path.hpp"
#include "proto/version.hpp"

namespace {
using namespace hostkeeper;
using namespace hostkeeper::daemon;
using namespace hostkeeper::daemon::app;
namespace asio = boost::asio;

// SIGHUP flushes every cache (`flush_all` says how many entries it dropped);
// SIGINT and SIGTERM stop the server.
void wait_for_signals(asio::signal_set& signals, server::Server& server,
                      const std::function<std::size_t()>& flush_all) {
    signals.async_wait([&](const boost::system::error_code& ec, int signal) {
        if (ec) return;
        if (signal == SIGHUP) {
            spdlog::info("SIGHUP: flushed {} cached entries", flush_all());
            wait_for_signals(signals, server, flush_all);
            return;
        }
        spdlog::info("{}: stopping", signal == SIGINT ? "SIGINT" : "SIGTERM");
        server.stop();
    });
}

int serve(const Config& config, StartupReport& report) {
    std::optional<server::SocketOwner> owner;
    const server::SystemdListeners passed = server::systemd_listeners();
    int listen_fd = passed.unix_fd;
    const bool activated = listen_fd >= 0;
    std::string socket_path = "(socket activation)";
    proto::SocketLocation location = proto::resolve_socket_location();
    if (config.socket) {
        location.socket = std::filesystem::absolute(*config.socket);
        location.directory = location.socket.parent_path();
    }
    if (listen_fd < 0) {
        owner.emplace(location);
        listen_fd = owner->release_listener();
        socket_path = location.socket.string();
    }

    asio::io_context io(1);
    asio::thread_pool keyring_thread(1);
    backends::BackendOptions keyring_options = config.keyring;
    keyring_options.unlock_timeout = config.unlock_timeout;
    backends::ChosenKeyring keyring(io.get_executor(), keyring_thread.get_executor(),
                                    keyring_options);
    credentials::CredentialService credentials(io.get_executor(), keyring_thread.get_executor(),
                                               keyring, config.credentials);
    // Chooses the backend (keyring.backend) and watches it: the cache follows
    // the keyring, so a lock, an edit or a restart drops it.
    keyring.attach(credentials);
    http::CurlHttpClient http(
        io.get_executor(),
        http::CurlHttpClient::from_environment(
            std::string("hostkeeper/") + proto::product_version(), config.http.ca_file));
    discovery::DiscoveryService discovery(io.get_executor(), http, credentials, config.discovery);
    registry::RegistryOptions registry_options = config.registry;
    // Packages wait for their client in the socket's private (0700) directory.
    registry_options.downloads_dir = location.directory / "downloads";
    archives::ArchiveStoreOptions archive_options = config.archives;
    if (archive_options.dir.empty()) archive_options.dir = archives::default_archive_dir();
    archive_options.fetch_timeout = config.registry.fetch_timeout;
    archives::ArchiveStore archive_store(io.get_executor(), http, archive_options);
    registry::RegistryService registry(io.get_executor(), http, credentials, discovery,
                                       registry_options);
    // The registry cache: on when `hostkeeper setup --registry-cache` wrote its file.
    std::optional<registry_cache::CacheConfig> cache_config;
    std::string cache_problem;
    try {
        cache_config = registry_cache::load_cache_config(proto::registry_cache_config_path());
    } catch (const std::exception& e) {
        cache_problem = e.what();
        spdlog::error("registry cache off: {}", e.what());
    }
    registry_cache::RegistryCache registry_cache(
        io.get_executor(), std::move(cache_config), proto::registry_cache_state_path(),
        proto::documents_dir(), credentials, discovery, registry, archive_store);
    handlers::RegistryPortRequests port_requests(registry_cache.gate());
    std::optional<server::HttpListener> cache_listener;
    std::optional<registry_cache::PortLink> port_link;
    // Started on demand or by socket activation, it exits when idle: the next
    // client starts it again (the helper, or systemd through the socket).
    // Started by hand, it runs until it is stopped.
    const std::chrono::seconds idle_timeout =
        config.on_demand || activated ? config.idle_timeout : std::chrono::seconds(0);
    credentials::KeyringItems keyring_items(keyring_thread.get_executor(), keyring);
    handlers::Dispatcher dispatcher(
        credentials, keyring_items, discovery, registry, registry_cache, keyring,
        handlers::DaemonInfo{socket_path, config.on_demand, idle_timeout});
    asio::signal_set signals(io, SIGINT, SIGTERM, SIGHUP);
    const server::StopHooks hooks{[&http, &cache_listener, &port_link, &registry_cache] {
                                      sd_notify(0, "STOPPING=1");
                                      registry_cache.stop();
                                      if (port_link) port_link->stop();
                                      if (cache_listener) cache_listener->stop();
                                      // Fetches in flight fail now ("hostkeeperd is stopping"), so
                                      // that their clients get an answer instead of waiting out the
                                      // shutdown timeout.
                                      http.stop();
                                  },
                                  [&] {
                                      boost::system::error_code ignored;
                                      signals.cancel(ignored);
                                      io.stop();
                                  }};
    server::Server server(io, listen_fd, dispatcher,
                          server::ServerOptions{config.max_connections, config.read_timeout,
                                                config.shutdown_timeout, idle_timeout},
                          hooks);
    const std::function<std::size_t()> flush_all = [&] {
        return credentials.flush() + discovery.flush() + registry.flush();
    };
    wait_for_signals(signals, server, flush_all);
    server.on_idle([&] {
        spdlog::info("no clients for {} s: exiting (the next client starts it again{})",
                     idle_timeout.count(), activated ? ", through hostkeeperd.socket" : "");
        server.stop();
    });
    server.start();
    // A TCP socket from systemd is a drop-in of an older setup (ListenStream=
    // 127.0.0.1:PORT): the daemon never listens on TCP itself, since another
    // user could take such a port whenever it is let go.
    if (passed.tcp_fd >= 0) {
        ::close(passed.tcp_fd);
        spdlog::warn(
            "hostkeeperd.socket passes a TCP port (a drop-in of an older hostkeeper setup): "
            "closed; the registry cache uses the registry port (run hostkeeper setup "
            "--registry-cache to remove the drop-in)");
    }
    if (registry_cache.enabled()) {
        cache_listener.emplace(io, port_requests, server::ListenerOptions{},
                               [&server] { server.activity(); });
        registry_cache::PortEvents events{
            [&registry_cache](std::uint16_t port) { registry_cache.port_registered(port); },
            [&registry_cache](const std::string& why) { registry_cache.port_lost(why); },
            [&registry_cache](const std::string& why) { registry_cache.port_unavailable(why); }};
        port_link.emplace(io, keyring_thread.get_executor(), proto::port_socket_path(),
                          std::move(events), [&cache_listener](asio::ip::tcp::socket socket) {
                              cache_listener->adopt(std::move(socket));
                          });
        port_link->start();
    }
    if (!cache_problem.empty()) registry_cache.port_unavailable(cache_problem);

    report.send("ready");
    sd_notify(0, "READY=1");
    spdlog::info("hostkeeperd {} (protocol {}) serving {} as uid {}, pid {}",
                 proto::product_version(), proto::kProtocolVersion, socket_path, ::geteuid(),
                 ::getpid());
    io.run();
    http.stop();
    archive_store.stop();
    registry.stop();
    discovery.stop();
    credentials.stop();
    keyring.detach();
    keyring_thread.join();
    spdlog::info("stopped");
    return 0;
}

// Whether `hostkeeper setup --registry-cache` turned the registry cache on
// (its file is there and valid).
bool registry_cache_enabled() {
    try {
        return registry_cache::load_cache_config(proto::registry_cache_config_path()).has_value();
    } catch (const std::exception&) {
        return false;
    }
}

// A daemon that cannot run with its configuration says why to whoever
// started it: `--check-config` and a terminal on stderr, the helper through
// --ready-fd, and a client of a socket-activated start in its answer.
int refuse_to_run(const InvalidConfig& error) {
    std::fprintf(stderr, "hostkeeperd: %s\n", error.what());
    const Config& command_line = error.command_line();
    if (command_line.check_config) return 2;
    StartupReport report(command_line.ready_fd);
    report.send(std::string("error ") + error.what());
    const server::SystemdListeners passed = server::systemd_listeners();
    if (passed.tcp_fd >= 0) ::close(passed.tcp_fd);
    const int listen_fd = passed.unix_fd;
    if (listen_fd < 0) return 2;

    // Socket activation: systemd would restart us into the same error until
    // its start limit, and clients would hear nothing. Answer them instead.
    setup_logging("info");
    spdlog::error("cannot run with this configuration: {}; answering every request with the reason",
                  error.what());
    asio::io_context io(1);
    asio::thread_pool worker(1);  // the port link's reconnections
    asio::signal_set signals(io, SIGINT, SIGTERM);
    handlers::ConfigErrorHandler handler(error.what());
    std::optional<server::HttpListener> refusals;
    std::optional<registry_cache::PortLink> port_link;
    // Idle for 10 s: exit, so the next connection starts a daemon that reads the fixed file.
    server::Server server(
        io, listen_fd, handler,
        server::ServerOptions{command_line.max_connections, command_line.read_timeout,
                              command_line.shutdown_timeout, std::chrono::seconds(10)},
        server::StopHooks{[&port_link] {
                              if (port_link) port_link->stop();
                          },
                          [&] {
                              boost::system::error_code ignored;
                              signals.cancel(ignored);
                              io.stop();
                          }});
    server.on_idle([&] { server.stop(); });
    signals.async_wait([&](const boost::system::error_code& ec, int) {
        if (!ec) server.stop();
    });
    server.start();
    // With the registry cache on, Terraform's own requests hear the reason too.
    if (registry_cache_enabled()) {
        // Each connection's first request answered, then closed; 64 at most.
        refusals.emplace(io, registry_cache::config_error_answer(error.what()),
                         server::ListenerOptions{64, std::chrono::seconds(10),
                                                 std::chrono::seconds(10), "registry cache"},
                         [&server] { server.activity(); });
        port_link.emplace(
            io, worker.get_executor(), proto::port_socket_path(), registry_cache::PortEvents{},
            [&refusals](asio::ip::tcp::socket socket) { refusals->adopt(std::move(socket)); });
        port_link->start();
    }
    sd_notifyf(0, "READY=1\nSTATUS=cannot run with its configuration: %s", error.what());
    io.run();
    return 0;
}

}  // namespace

int main(int argc, char** argv) {
    disable_core_dumps();
    tune_allocator();
    std::signal(SIGPIPE, SIG_IGN);
    http::CurlHttpClient::prepare();

    ParsedArgs parsed;
    try {
        parsed = parse_args(argc, argv);
    } catch (const InvalidConfig& e) {
        return refuse_to_run(e);
    } catch (const ConfigError& e) {
        std::fprintf(stderr, "hostkeeperd: %s\n", e.what());
        return 2;
    }
    if (!parsed.config) return parsed.exit_code;
    const Config& config = *parsed.config;
    if (config.check_config) {
        for (const std::string& warning : config.warnings)
            std::printf("hostkeeperd: warning: %s\n", warning.c_str());
        std::printf(
            "hostkeeperd: the configuration is valid (%s)\n",
            config.config_file ? config.config_file->c_str() : "no configuration file; defaults");
        return 0;
    }
    StartupReport report(config.ready_fd);
    if (config.on_demand) log_to_journal_if_possible();
    setup_logging(config.log_level);
    for (const std::string& warning : config.warnings) spdlog::warn("{}", warning);

    try {
        return serve(config, report);
    } catch (const server::AlreadyRunning& e) {
        spdlog::error("{}", e.what());
        if (report.wanted()) {
            report.send("running");
            return 0;
        }
        return 1;
    } catch (const std::exception& e) {
        spdlog::error("{}", e.what());
        report.send(std::string("error ") + e.what());
        return 1;
    }
}
