// hostkeeperd: the composition root. Wires configuration, the socket, the
// keyring adapter, the services, the dispatcher and the server onto one
// io_context, each given what it needs as it is made; signals stop the server.

#include <spdlog/spdlog.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <systemd/sd-daemon.h>
#include <unistd.h>

#include <boost/asio/io_context.hpp>
#include <boost/asio/signal_set.hpp>
#include <boost/asio/thread_pool.hpp>
#include <chrono>
#include <csignal>
#include <cstddef>
#include <cstring>
#include <functional>
#include <optional>
#include <string>
#include <string_view>

#include "daemon/app/config.hpp"
#include "daemon/app/fleet_setup.hpp"
#include "daemon/app/process.hpp"
#include "daemon/archives/archive_store.hpp"
#include "daemon/backends/chosen_keyring.hpp"
#include "daemon/credentials/command_runner.hpp"
#include "daemon/credentials/command_tokens.hpp"
#include "daemon/credentials/credential_service.hpp"
#include "daemon/credentials/expiry_notice.hpp"
#include "daemon/credentials/expiry_watch.hpp"
#include "daemon/credentials/keyring_items.hpp"
#include "daemon/discovery/discovery_service.hpp"
#include "daemon/handlers/config_error_handler.hpp"
#include "daemon/handlers/dispatcher.hpp"
#include "daemon/http/curl_http_client.hpp"
#include "daemon/notify/desktop_notifications.hpp"
#include "daemon/registry/registry_service.hpp"
#include "daemon/registry_cache/cache_config.hpp"
#include "daemon/registry_cache/config_error_answer.hpp"
#include "daemon/registry_cache/registry_cache.hpp"
#include "daemon/registry_cache/registry_door.hpp"
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

// Where the daemon listens: the Unix socket systemd passed, or its own,
// bound into `owner`.
struct Listening {
    server::SystemdListeners passed;
    int listen_fd = -1;
    bool activated = false;
    std::string socket_path = "(socket activation)";
    proto::SocketLocation location;
};

// The path the Unix socket `fd` was bound to ("" when it has none).
std::string bound_path(int fd) {
    sockaddr_un address{};
    socklen_t length = sizeof address;
    // NOLINTNEXTLINE(cppcoreguidelines-pro-type-reinterpret-cast): the sockets API
    if (::getsockname(fd, reinterpret_cast<sockaddr*>(&address), &length) != 0 ||
        address.sun_family != AF_UNIX || length <= offsetof(sockaddr_un, sun_path) ||
        address.sun_path[0] == '\0') {
        return "";
    }
    return std::string(address.sun_path,
                       ::strnlen(address.sun_path, length - offsetof(sockaddr_un, sun_path)));
}

Listening listen_for_clients(const Config& config, std::optional<server::SocketOwner>& owner,
                             const server::SystemdListeners& passed) {
    Listening listening;
    listening.passed = passed;
    listening.listen_fd = listening.passed.unix_fd;
    listening.activated = listening.listen_fd >= 0;
    listening.location = proto::resolve_socket_location();
    if (config.socket) {
        listening.location.socket = std::filesystem::absolute(*config.socket);
        listening.location.directory = listening.location.socket.parent_path();
    }
    if (listening.listen_fd < 0) {
        owner.emplace(listening.location);
        listening.listen_fd = owner->release_listener();
        listening.socket_path = listening.location.socket.string();
    }
    return listening;
}

backends::BackendOptions keyring_options(const Config& config) {
    backends::BackendOptions options = config.keyring;
    options.unlock_timeout = config.unlock_timeout;
    return options;
}

// The keyring, on its own worker thread, and the credential cache in front
// of it; the token commands, on threads of their own (a slow command never
// holds up the keyring).
struct KeyringWing {
    KeyringWing(asio::io_context& io, const Config& config, const proto::SocketLocation& location)
        : warned(location.directory / "expiry-warnings.json"),
          keyring(io.get_executor(), thread.get_executor(), keyring_options(config)),
          credentials(io.get_executor(), thread.get_executor(), keyring, config.credentials),
          commands(io.get_executor(), command_threads.get_executor(), config.token_commands) {
        credentials.tokens().remember_warnings(warned);
        // Chooses the backend (keyring.backend) and watches it: the cache
        // follows the keyring, so a lock, an edit or a restart drops it.
        keyring.attach(credentials);
        credentials.tokens().use_token_commands(commands);
        if (!config.token_commands.refused.empty())
            spdlog::error("token commands not run: {}", config.token_commands.refused);
    }

    asio::thread_pool thread{1};
    asio::thread_pool command_threads{2};
    credentials::WarnedStages warned;  // beside the socket: one warning per stage and session
    backends::ChosenKeyring keyring;
    credentials::CredentialService credentials;
    credentials::CommandTokens commands;
};

registry::RegistryOptions registry_options(const Config& config,
                                           const proto::SocketLocation& location) {
    registry::RegistryOptions options = config.registry;
    // Packages wait for their client in the socket's private (0700) directory.
    options.downloads_dir = location.directory / "downloads";
    return options;
}

archives::ArchiveStoreOptions archive_options(const Config& config) {
    archives::ArchiveStoreOptions options = config.archives;
    if (config.archive_dir) options.dir = *config.archive_dir;
    if (options.dir.empty()) options.dir = archives::default_archive_dir();
    options.fetch_timeout = config.registry.fetch_timeout;
    return options;
}

// The registry cache's file, read: on when `hostkeeper setup --registry-cache`
// wrote it; `problem` says why it is off when the file is there but wrong.
struct CacheSetting {
    std::optional<registry_cache::CacheConfig> config;
    std::string problem;
};

CacheSetting load_cache_setting() {
    CacheSetting setting;
    try {
        setting.config = registry_cache::load_cache_config(proto::registry_cache_config_path());
    } catch (const std::exception& e) {
        setting.problem = e.what();
        spdlog::error("registry cache off: {}", e.what());
    }
    return setting;
}

// The services, made in the order they depend on each other: the keyring
// and credentials, HTTP, discovery, the archive store, the registries and
// the registry cache.
struct Services {
    Services(asio::io_context& io, const Config& config, const proto::SocketLocation& location)
        : keyring(io, config, location),
          http(io.get_executor(),
               http::CurlHttpClient::from_environment(
                   std::string("hostkeeper/") + proto::product_version(), config.http.ca_file)),
          discovery(io.get_executor(), http, keyring.credentials.tokens(), config.discovery),
          archive_store(io.get_executor(), http, archive_options(config)),
          registry(io.get_executor(), http, keyring.credentials.tokens(), discovery,
                   registry_options(config, location)),
          cache_setting(load_cache_setting()),
          registry_cache(io.get_executor(), std::move(cache_setting.config),
                         proto::registry_cache_state_path(), proto::documents_dir(),
                         keyring.credentials.tokens(), discovery, registry, archive_store) {
        keyring.credentials.tokens().use_token_refresher(discovery.login());
        keyring.credentials.tokens().rotated_hosts(config.discovery.rotate);
    }

    // Once the event loop is done: every service stops, the keyring's watch
    // ends and its thread is joined.
    void stop() {
        http.stop();
        archive_store.stop();
        registry.stop();
        discovery.stop();
        keyring.credentials.stop();
        keyring.keyring.detach();
        keyring.thread.join();
        keyring.commands.stop();  // a command still running is ended, not waited for
        keyring.command_threads.join();
    }

    KeyringWing keyring;
    http::CurlHttpClient http;
    discovery::DiscoveryService discovery;
    archives::ArchiveStore archive_store;
    registry::RegistryService registry;
    CacheSetting cache_setting;
    registry_cache::RegistryCache registry_cache;
};

// Ends the event loop once the server has stopped.
std::function<void()> end_event_loop(asio::io_context& io, asio::signal_set& signals) {
    return [&io, &signals] {
        boost::system::error_code ignored;
        signals.cancel(ignored);
        io.stop();
    };
}

server::StopHooks stop_hooks(asio::io_context& io, asio::signal_set& signals, Services& services,
                             std::optional<registry_cache::RegistryDoor>& door) {
    return server::StopHooks{[&services, &door] {
                                 sd_notify(0, "STOPPING=1");
                                 services.registry_cache.stop();
                                 if (door) door->stop();
                                 // Fetches in flight fail now ("hostkeeperd is stopping"), so
                                 // that their clients get an answer instead of waiting out the
                                 // shutdown timeout.
                                 services.http.stop();
                                 // So do gets waiting on a token command: it is ended.
                                 services.keyring.commands.stop();
                             },
                             end_event_loop(io, signals)};
}

// A TCP socket from systemd is a drop-in of an older setup (ListenStream=
// 127.0.0.1:PORT): the daemon never listens on TCP itself, since another
// user could take such a port whenever it is let go.
void close_passed_tcp_port(const server::SystemdListeners& passed) {
    if (passed.tcp_fd < 0) return;
    ::close(passed.tcp_fd);
    spdlog::warn(
        "hostkeeperd.socket passes a TCP port (a drop-in of an older hostkeeper setup): "
        "closed; the registry cache uses the registry port (run hostkeeper setup "
        "--registry-cache to remove the drop-in)");
}

// A desktop notification for each warning of a stored token's expiry,
// unless `notify = false`.
void notify_expiries(credentials::TokenLifecycle& tokens,
                     notify::DesktopNotifications& notifications, bool on) {
    if (!on) return;
    tokens.on_expiry_alert([&notifications](const credentials::ExpiryAlert& alert) {
        credentials::ExpiryNotice notice = credentials::expiry_notice(alert);
        notifications.send(std::move(notice.summary), std::move(notice.body));
    });
}

int serve(const Config& config, StartupReport& report) {
    std::optional<server::SocketOwner> owner;
    const Listening listening = listen_for_clients(config, owner, server::systemd_listeners());
    asio::io_context io(1);
    notify::DesktopNotifications notifications;  // outlives the services that use it
    Services services(io, config, listening.location);
    notify_expiries(services.keyring.credentials.tokens(), notifications, config.notify);
    std::optional<registry_cache::RegistryDoor> registry_door;
    // Started on demand or by socket activation, it exits when idle: the next
    // client starts it again (the helper, or systemd through the socket).
    // Started by hand, it runs until it is stopped.
    const std::chrono::seconds idle_timeout =
        config.on_demand || listening.activated ? config.idle_timeout : std::chrono::seconds(0);
    credentials::KeyringItems keyring_items(services.keyring.thread.get_executor(),
                                            services.keyring.keyring, services.keyring.credentials,
                                            config.git_usernames);
    const std::unique_ptr<fleet::FleetTier> fleet_tier = make_fleet_tier(
        io.get_executor(), services.http, config, keyring_items, services.keyring.commands);
    services.archive_store.set_tier(fleet_tier.get());
    // Every stored host's expiry, looked at soon after start and then hourly.
    credentials::ExpiryWatch expiry_watch(io.get_executor(), keyring_items,
                                          services.keyring.credentials.tokens());
    expiry_watch.learn_with(
        [&services](std::string host) { return services.discovery.learn_expiry(std::move(host)); });
    handlers::Dispatcher dispatcher(
        services.keyring.credentials, keyring_items, services.discovery, services.registry,
        services.registry_cache, services.keyring.keyring,
        handlers::DaemonInfo{listening.socket_path, config.on_demand, idle_timeout});
    asio::signal_set signals(io, SIGINT, SIGTERM, SIGHUP);
    server::Server server(io, listening.listen_fd, dispatcher,
                          server::ServerOptions{config.max_connections, config.read_timeout,
                                                config.shutdown_timeout, idle_timeout},
                          stop_hooks(io, signals, services, registry_door));
    const std::function<std::size_t()> flush_all = [&services] {
        return services.keyring.credentials.flush() + services.discovery.flush() +
               services.registry.flush();
    };
    wait_for_signals(signals, server, flush_all);
    server.on_idle([&] {
        spdlog::info("no clients for {} s: exiting (the next client starts it again{})",
                     idle_timeout.count(),
                     listening.activated ? ", through hostkeeperd.socket" : "");
        server.stop();
    });
    // A run's port stays served while the run lasts, however quiet it is.
    server.stay_while([&services] { return services.registry_cache.runs().count() > 0; });
    server.start();
    close_passed_tcp_port(listening.passed);
    // Runs' own ports are served whether or not the registry port is.
    registry_door.emplace(io, services.registry_cache, server);
    if (services.registry_cache.enabled()) {
        // The daemon binds its own socket under a temporary name, so only
        // a passed one is asked its name.
        registry_door->open_port(
            services.keyring.thread.get_executor(),
            listening.activated ? bound_path(listening.listen_fd) : listening.socket_path);
    }
    if (!services.cache_setting.problem.empty())
        services.registry_cache.port_unavailable(services.cache_setting.problem);

    report.send("ready");
    sd_notify(0, "READY=1");
    spdlog::info("hostkeeperd {} (protocol {}) serving {} as uid {}, pid {}",
                 proto::product_version(), proto::kProtocolVersion, listening.socket_path,
                 ::geteuid(), ::getpid());
    expiry_watch.start();
    io.run();
    expiry_watch.stop();
    services.stop();
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
// --ready-fd, and then the clients of its socket (systemd's, or its own when
// the helper started it) in their answers, until it is idle.
int refuse_to_run(const InvalidConfig& error) {
    std::fprintf(stderr, "hostkeeperd: %s\n", error.what());
    const Config& command_line = error.command_line();
    if (command_line.check_config) return 2;
    StartupReport report(command_line.ready_fd);
    std::optional<server::SocketOwner> owner;
    Listening listening;
    try {
        const server::SystemdListeners passed = server::systemd_listeners();
        if (passed.unix_fd >= 0 || command_line.on_demand)
            listening = listen_for_clients(command_line, owner, passed);
    } catch (const std::exception&) {
        listening.listen_fd = -1;  // another daemon answers there, or the socket cannot be made
    }
    report.send(std::string("error ") + error.what());
    if (listening.passed.tcp_fd >= 0) ::close(listening.passed.tcp_fd);
    const int listen_fd = listening.listen_fd;
    if (listen_fd < 0) return 2;

    // Exiting would leave the clients to hear nothing (and systemd would
    // restart us into the same error until its start limit, the helper start
    // us again for every request). Answer them instead.
    setup_logging("info");
    spdlog::error("cannot run with this configuration: {}; answering every request with the reason",
                  error.what());
    asio::io_context io(1);
    asio::thread_pool worker(1);  // the port link's reconnections
    asio::signal_set signals(io, SIGINT, SIGTERM);
    handlers::ConfigErrorHandler handler(error.what());
    std::optional<registry_cache::RegistryDoor> refusals;
    // Idle for 10 s: exit, so the next connection starts a daemon that reads the fixed file.
    server::Server server(
        io, listen_fd, handler,
        server::ServerOptions{command_line.max_connections, command_line.read_timeout,
                              command_line.shutdown_timeout, std::chrono::seconds(10)},
        server::StopHooks{[&refusals] {
                              if (refusals) refusals->stop();
                          },
                          end_event_loop(io, signals)});
    server.on_idle([&] { server.stop(); });
    signals.async_wait([&](const boost::system::error_code& ec, int) {
        if (!ec) server.stop();
    });
    server.start();
    // With the registry cache on, Terraform's own requests hear the reason too.
    if (registry_cache_enabled()) {
        refusals.emplace(io, registry_cache::config_error_answer(error.what()), server);
        refusals->open_port(worker.get_executor(),
                            listening.activated ? bound_path(listen_fd) : listening.socket_path);
    }
    sd_notifyf(0, "READY=1\nSTATUS=cannot run with its configuration: %s", error.what());
    io.run();
    return 0;
}

}  // namespace

int main(int argc, char** argv) {
    // In a token command's transient unit: find and check its program, then run it.
    if (argc >= 2 && std::string_view(argv[1]) == credentials::kExecTrustedOption)
        return credentials::exec_trusted_command(argc - 2, argv + 2);
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
