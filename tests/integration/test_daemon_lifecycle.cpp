// Starting, restarting, refusing and stopping the daemon, with real processes.
#include <signal.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include <atomic>
#include <catch2/catch.hpp>
#include <cstring>
#include <fstream>
#include <thread>

#include "harness.hpp"

namespace test_daemon_lifecycle {

using namespace hostkeeper::it;
namespace fs = std::filesystem;

TEST_CASE("50 helpers started at once against no daemon: all succeed, one daemon", "[lifecycle]") {
    const fs::path socket = fresh_socket();
    std::vector<Spawned> helpers;
    for (int i = 0; i < 50; ++i) {
        helpers.push_back(
            spawn({bin("terraform-credentials-hostkeeper"), "--socket=" + socket.string(),
                   "--timeout=60", "get", "host" + std::to_string(i % 5) + ".example.com"}));
    }
    int ok = 0;
    for (auto& h : helpers) {
        const Result r = h.wait();
        if (r.exit_code == 0 && r.out == "{}\n") {
            ++ok;
        } else {
            UNSCOPED_INFO("helper failed: exit " << r.exit_code << ", stderr: " << r.err);
        }
    }
    CHECK(ok == 50);
    CHECK(daemons_matching(socket.string()).size() == 1);
}

TEST_CASE("a daemon killed with SIGKILL is replaced by the next helper call", "[lifecycle]") {
    const fs::path socket = fresh_socket();
    REQUIRE(helper(socket, {"store", "kill.example.com"}, R"({"token":"survives"})").exit_code ==
            0);
    const auto before = daemons_matching(socket.string());
    REQUIRE(before.size() == 1);
    ::kill(before[0], SIGKILL);
    REQUIRE(wait_until([&] { return !process_alive(before[0]); }, std::chrono::seconds(5)));
    CHECK(fs::exists(socket));  // the stale socket is left behind...

    const Result got = helper(socket, {"get", "kill.example.com"});  // ...and replaced
    CHECK(got.exit_code == 0);
    CHECK(got.out == "{\"token\":\"survives\"}\n");
    const auto after = daemons_matching(socket.string());
    REQUIRE(after.size() == 1);
    CHECK(after[0] != before[0]);
}

TEST_CASE("a second daemon never takes over a live one's socket", "[lifecycle]") {
    const fs::path socket = fresh_socket();
    const Daemon first(socket);
    const Result second = run({bin("hostkeeperd"), "--socket", socket.string()});
    CHECK(second.exit_code == 1);
    CHECK_THAT(second.err, Catch::Contains("already serves"));
    CHECK(helper(socket, {"get", "x.example.com"}).exit_code == 0);
    CHECK(process_alive(first.pid()));
}

TEST_CASE("a socket directory with mode 0777 is refused by daemon and helper", "[lifecycle]") {
    const fs::path socket = fresh_socket();
    ::chmod(socket.parent_path().c_str(), 0777);
    const Result daemon = run({bin("hostkeeperd"), "--socket", socket.string()});
    CHECK(daemon.exit_code == 1);
    CHECK_THAT(daemon.err, Catch::Contains("mode 0777") && Catch::Contains("chmod 700"));
    CHECK_FALSE(fs::exists(socket));

    const Result client = helper(socket, {"get", "app.example.com"});
    CHECK(client.exit_code == 4);
    CHECK_THAT(client.err, Catch::Contains("chmod 700"));
    CHECK(client.out.empty());
}

namespace {

// Connects to `socket` as soon as it exists; the errno of the first attempt
// that found something there (0: connected).
int first_connect_errno(const fs::path& socket, std::chrono::seconds limit) {
    sockaddr_un address{};
    address.sun_family = AF_UNIX;
    std::strncpy(address.sun_path, socket.c_str(), sizeof address.sun_path - 1);
    const auto until = std::chrono::steady_clock::now() + limit;
    while (std::chrono::steady_clock::now() < until) {
        const int fd = ::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
        if (fd < 0) return errno;
        const int rc = ::connect(fd, reinterpret_cast<const sockaddr*>(&address), sizeof address);
        const int error = rc == 0 ? 0 : errno;
        ::close(fd);
        if (error != ENOENT) return error;
    }
    return ETIMEDOUT;
}

}  // namespace

TEST_CASE("the socket path appears only once the daemon accepts connections", "[lifecycle]") {
    // A client that finds the path between bind() and listen() is refused
    // (ECONNREFUSED) and would take the daemon for dead. Probe in a tight
    // loop while daemons start, many times over.
    for (int round = 0; round < 40; ++round) {
        const fs::path socket = fresh_socket();
        Spawned daemon = spawn({bin("hostkeeperd"), "--socket", socket.string()});
        const int error = first_connect_errno(socket, std::chrono::seconds(10));
        const Result served = helper(socket, {"get", "start.example.com"});
        ::kill(daemon.pid, SIGTERM);
        const Result stopped = daemon.wait();
        INFO("round " << round << ": " << std::strerror(error) << "; daemon: " << stopped.err);
        REQUIRE(error == 0);
        CHECK(served.exit_code == 0);
        CHECK(stopped.exit_code == 0);
        CHECK_FALSE(fs::exists(socket.string() + ".new"));
    }
}

TEST_CASE("SIGTERM: the daemon exits 0 and removes its socket", "[lifecycle]") {
    const fs::path socket = fresh_socket();
    Daemon daemon(socket);
    REQUIRE(helper(socket, {"get", "term.example.com"}).exit_code == 0);
    CHECK(daemon.stop() == 0);
    CHECK_FALSE(fs::exists(socket));
}

TEST_CASE("an on-demand daemon exits after its idle timeout", "[lifecycle]") {
    const fs::path socket = fresh_socket();
    const fs::path config_dir = test_root() / "config" / "hostkeeper";
    fs::create_directories(config_dir);
    std::ofstream(config_dir / "config.toml") << "idle_timeout = 1\n";
    REQUIRE(helper(socket, {"get", "idle.example.com"}).exit_code == 0);
    const auto pids = daemons_matching(socket.string());
    REQUIRE(pids.size() == 1);
    CHECK(wait_until([&] { return !process_alive(pids[0]); }, std::chrono::seconds(15)));
    CHECK_FALSE(fs::exists(socket));
    fs::remove(config_dir / "config.toml");
    // The next call simply starts a new one.
    CHECK(helper(socket, {"get", "idle.example.com"}).exit_code == 0);
}

TEST_CASE("a daemon that cannot start is reported by the helper with the reason", "[lifecycle]") {
    const fs::path socket = fresh_socket();
    const fs::path config_dir = test_root() / "config" / "hostkeeper";
    fs::create_directories(config_dir);
    std::ofstream(config_dir / "config.toml") << "log_level = \"info\"\nidle_timout = \"10m\"\n";
    const std::string reason =
        (config_dir / "config.toml").string() + ":2: unknown key \"idle_timout\"";
    // The daemon's own one-line reason, through whichever command started it.
    const Result got = helper(socket, {"get", "app.example.com"});
    CHECK(got.exit_code == 4);
    CHECK_THAT(got.err, Catch::Contains("hostkeeperd could not start: " + reason));
    CHECK(got.out.empty());
    const Result start = run({bin("hostkeeper"), "--socket", socket.string(), "start"});
    CHECK(start.exit_code == 4);
    CHECK_THAT(start.err, Catch::Contains(reason));
    const Result check = run({bin("hostkeeperd"), "--check-config"});
    CHECK(check.exit_code == 2);
    CHECK_THAT(check.err, Catch::Contains(reason));
    fs::remove(config_dir / "config.toml");
    const Result fixed = run({bin("hostkeeperd"), "--check-config"});
    CHECK(fixed.exit_code == 0);
    CHECK_THAT(fixed.out, Catch::Contains("the configuration is valid"));
}

TEST_CASE("a socket-activated daemon that cannot run answers every client with the reason",
          "[lifecycle]") {
    const fs::path socket = fresh_socket();
    const fs::path config = socket.parent_path() / "config.toml";
    std::ofstream(config) << "[credentials]\nttl = \"soon\"\n";
    Spawned activator = spawn({"/usr/bin/systemd-socket-activate", "-l", socket.string(), "-E",
                               "DBUS_SESSION_BUS_ADDRESS", "-E", "HOME", "-E", "XDG_RUNTIME_DIR",
                               bin("hostkeeperd"), "--config", config.string()});
    REQUIRE(wait_until([&] { return fs::exists(socket); }, std::chrono::seconds(10)));
    for (int i = 0; i < 3; ++i) {  // the same daemon answers each one: no restart loop
        const Result got = helper(socket, {"get", "app.example.com"});
        CHECK(got.exit_code == 4);
        CHECK_THAT(
            got.err,
            Catch::Contains("hostkeeperd cannot run with its configuration: " + config.string() +
                            ":2: \"credentials.ttl\": \"soon\" is not a duration") &&
                Catch::Contains("hostkeeper stop"));
        CHECK(got.out.empty());
    }
    CHECK(daemons_matching(config.string()).size() == 1);
    // `hostkeeper stop` ends it; systemd (here: systemd-socket-activate) would start a new one.
    const Result stop = run({bin("hostkeeper"), "--socket", socket.string(), "stop"});
    CHECK(stop.exit_code == 0);
    CHECK(wait_until([&] { return daemons_matching(config.string()).empty(); },
                     std::chrono::seconds(10)));
    ::kill(activator.pid, SIGTERM);
    activator.wait();
}

TEST_CASE("a socket-activated daemon exits after its idle timeout", "[lifecycle]") {
    // systemd starts it again on the next connection, so an idle one need not
    // stay (holding tokens in memory). systemd-socket-activate execs it with
    // LISTEN_FDS as the socket unit would.
    const fs::path socket = fresh_socket();
    Spawned activated = spawn({"/usr/bin/systemd-socket-activate", "-l", socket.string(), "-E",
                               "DBUS_SESSION_BUS_ADDRESS", "-E", "HOME", "-E", "XDG_RUNTIME_DIR",
                               bin("hostkeeperd"), "--idle-timeout", "1"},
                              RunOptions{});
    REQUIRE(wait_until([&] { return fs::exists(socket); }, std::chrono::seconds(10)));
    REQUIRE(helper(socket, {"get", "idle.example.com"}).exit_code == 0);
    const bool exited =
        wait_until([&] { return !process_alive(activated.pid); }, std::chrono::seconds(10));
    if (!exited) ::kill(activated.pid, SIGKILL);
    const Result daemon = activated.wait();
    CHECK(exited);
    CHECK(daemon.exit_code == 0);
    CHECK_THAT(daemon.err, Catch::Contains("no clients for 1 s: exiting") &&
                               Catch::Contains("through hostkeeperd.socket"));
}

TEST_CASE("a client of another uid is refused", "[foreign-uid]") {
    // As socket activation would: a listening socket anyone can reach, handed
    // to the daemon by systemd-socket-activate (LISTEN_FDS).
    char pattern[] = "/tmp/hk-public.XXXXXX";
    const fs::path public_dir = ::mkdtemp(pattern);
    ::chmod(public_dir.c_str(), 0755);
    const fs::path socket = public_dir / "socket";
    Spawned activator = spawn({"/usr/bin/systemd-socket-activate", "-l", socket.string(), "-E",
                               "DBUS_SESSION_BUS_ADDRESS", "-E", "HOME", "-E", "XDG_RUNTIME_DIR",
                               bin("hostkeeperd"), "--log-level", "debug"},
                              RunOptions{});
    REQUIRE(wait_until([&] { return fs::exists(socket); }, std::chrono::seconds(10)));
    ::chmod(socket.c_str(), 0666);

    // Our own helper, run by the stranger, does not even try: the directory is not theirs.
    const std::vector<std::string> as_stranger{"/usr/bin/setpriv", "--reuid=65534", "--regid=65534",
                                               "--clear-groups"};
    std::vector<std::string> argv = as_stranger;
    argv.insert(argv.end(), {bin("terraform-credentials-hostkeeper"), "--socket=" + socket.string(),
                             "--timeout=10", "get", "app.example.com"});
    const Result stranger = run(argv);
    CHECK(stranger.exit_code == 4);
    CHECK(stranger.out.empty());
    CHECK_THAT(stranger.err, Catch::Contains("is owned by uid 0, not by you (uid 65534)"));
    // A client of their own that does not look is refused by the daemon.
    argv = as_stranger;
    argv.insert(argv.end(), {"/usr/bin/python3", "-c",
                             "import socket, struct, sys\n"
                             "s = socket.socket(socket.AF_UNIX)\n"
                             "s.connect(sys.argv[1])\n"
                             "p = b'{\"v\":1,\"op\":\"get\",\"host\":\"app.example.com\"}'\n"
                             "s.sendall(struct.pack('>I', len(p)) + p)\n"
                             "n = struct.unpack('>I', s.recv(4, socket.MSG_WAITALL))[0]\n"
                             "print(s.recv(n, socket.MSG_WAITALL).decode())\n",
                             socket.string()});
    const Result raw = run(argv);
    CHECK(raw.exit_code == 0);
    CHECK_THAT(raw.out, Catch::Contains("\"forbidden\"") && Catch::Contains("serves uid 0 only"));

    // The owner's helper refuses the public directory too, and says how to fix it...
    const Result owner_refused = helper(socket, {"get", "app.example.com"});
    CHECK(owner_refused.exit_code == 4);
    CHECK_THAT(owner_refused.err, Catch::Contains("has mode 0755") && Catch::Contains("chmod 700"));
    // ...and once the directory is private, is served on the same socket.
    ::chmod(public_dir.c_str(), 0700);
    const Result owner = helper(socket, {"get", "app.example.com"});
    CHECK(owner.exit_code == 0);
    CHECK(owner.out == "{}\n");

    ::kill(activator.pid, SIGTERM);
    const Result daemon = activator.wait();
    fs::remove_all(public_dir);
    CHECK_THAT(daemon.err, Catch::Contains("refused a connection from uid 65534"));
    CHECK(daemon.exit_code == 0);
}

TEST_CASE("a daemon speaking another protocol version is stopped and replaced", "[lifecycle]") {
    // An "old" daemon: refuses every request with unsupported_version until
    // it is sent the frozen "stop", then goes away as a daemon would.
    const fs::path socket = fresh_socket();
    const int listener = ::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
    sockaddr_un address{};
    address.sun_family = AF_UNIX;
    std::strncpy(address.sun_path, socket.c_str(), sizeof address.sun_path - 1);
    REQUIRE(::bind(listener, reinterpret_cast<const sockaddr*>(&address), sizeof address) == 0);
    REQUIRE(::listen(listener, 8) == 0);
    std::atomic<bool> got_stop{false};
    std::thread old_daemon([&] {
        while (!got_stop) {
            const int fd = ::accept(listener, nullptr, nullptr);
            if (fd < 0) break;
            unsigned char header[4];
            if (::recv(fd, header, 4, MSG_WAITALL) == 4) {
                const std::size_t size = (std::size_t{header[2]} << 8U) | header[3];
                std::string body(size, '\0');
                ::recv(fd, body.data(), size, MSG_WAITALL);
                std::string reply;
                if (body.find("\"op\":\"stop\"") != std::string::npos) {
                    got_stop = true;
                    reply = R"({"v":0,"ok":true})";
                } else {
                    reply =
                        R"({"v":0,"ok":false,"error":{"code":"unsupported_version","message":"old"},"supported":[0]})";
                }
                const unsigned char out[4] = {0, 0, static_cast<unsigned char>(reply.size() >> 8U),
                                              static_cast<unsigned char>(reply.size() & 0xffU)};
                ::send(fd, out, 4, MSG_NOSIGNAL);
                ::send(fd, reply.data(), reply.size(), MSG_NOSIGNAL);
            }
            ::close(fd);
        }
        ::close(listener);
        ::unlink(socket.c_str());
    });

    const Result got = helper(socket, {"get", "upgrade.example.com"});
    old_daemon.join();
    CHECK(got_stop);
    CHECK(got.exit_code == 0);
    CHECK(got.out == "{}\n");
    CHECK(daemons_matching(socket.string()).size() == 1);  // the installed one now serves
}

TEST_CASE("a daemon started without the session bus is replaced for a client that has it",
          "[lifecycle]") {
    const fs::path socket = fresh_socket();
    REQUIRE(helper(socket, {"store", "bus.example.com"}, R"({"token":"on-the-bus"})").exit_code ==
            0);
    REQUIRE(run({bin("hostkeeper"), "--socket", socket.string(), "stop"}).exit_code == 0);
    // As `sudo -u`, cron or an SSH login without dbus-user-session would start it.
    RunOptions no_bus;
    no_bus.env = {{"DBUS_SESSION_BUS_ADDRESS", std::nullopt}, {"XDG_RUNTIME_DIR", std::nullopt}};
    REQUIRE(run({bin("hostkeeper"), "--socket", socket.string(), "start"}, no_bus).exit_code == 0);
    const std::vector<pid_t> busless = daemons_matching(socket.string());
    REQUIRE(busless.size() == 1);
    const Result refused = run({bin("terraform-credentials-hostkeeper"),
                                "--socket=" + socket.string(), "get", "bus.example.com"},
                               no_bus);
    CHECK(refused.exit_code == 1);  // no bus on either side: nothing to do better

    const Result got = helper(socket, {"get", "bus.example.com"});
    CHECK(got.exit_code == 0);
    CHECK(got.out == "{\"token\":\"on-the-bus\"}\n");
    CHECK_FALSE(process_alive(busless.front()));
    CHECK(daemons_matching(socket.string()).size() == 1);
    run({bin("hostkeeper"), "--socket", socket.string(), "stop"});
}

TEST_CASE("a daemon that others started without the session bus is named as the cause",
          "[lifecycle]") {
    const fs::path socket = fresh_socket();
    // Not on demand (as systemd would start it), and with no bus in its environment.
    Spawned activator = spawn({"/usr/bin/systemd-socket-activate", "-l", socket.string(), "-E",
                               "HOME", bin("hostkeeperd"), "--log-level", "debug"});
    REQUIRE(wait_until([&] { return fs::exists(socket); }, std::chrono::seconds(10)));
    const Result got = helper(socket, {"get", "bus.example.com"});
    ::kill(activator.pid, SIGTERM);
    activator.wait();
    CHECK(got.exit_code == 1);
    CHECK_THAT(
        got.err,
        Catch::Contains("was started without your session bus (it has none, you have unix:path="));
    CHECK_THAT(got.err,
               Catch::Contains("systemctl --user import-environment DBUS_SESSION_BUS_ADDRESS"));
    CHECK(got.out.empty());
}

}  // namespace test_daemon_lifecycle
