#include "keyring_control.hpp"

#include <signal.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <optional>
#include <stdexcept>
#include <thread>
#include <vector>

namespace hostkeeper::it {

namespace {

// keyring-env.sh's throw-away password, not a secret.
constexpr const char* kPassword = "throw-away-password";

std::optional<pid_t> restarted;

// Stops a keyring daemon this process started when the tests end.
struct Reaper {
    Reaper() = default;
    Reaper(const Reaper&) = delete;
    Reaper& operator=(const Reaper&) = delete;
    ~Reaper() {
        if (restarted) {
            ::kill(*restarted, SIGCONT);
            ::kill(*restarted, SIGTERM);
            ::waitpid(*restarted, nullptr, 0);
        }
    }
} reaper;

Result bus_call(const std::vector<std::string>& args) {
    std::vector<std::string> argv{"/usr/bin/dbus-send", "--session", "--print-reply=literal",
                                  "--reply-timeout=2000"};
    argv.insert(argv.end(), args.begin(), args.end());
    RunOptions options;
    options.timeout = std::chrono::seconds(5);
    return run(argv, options);
}

bool secrets_owned() {
    return bus_call({"--dest=org.freedesktop.DBus", "/org/freedesktop/DBus",
                     "org.freedesktop.DBus.NameHasOwner", "string:org.freedesktop.secrets"})
               .out.find("true") != std::string::npos;
}

void put_u32(std::string& out, std::uint32_t value) {
    for (int shift = 24; shift >= 0; shift -= 8)
        out.push_back(static_cast<char>((value >> shift) & 0xffU));
}

}  // namespace

Result lock_login_collection() {
    return run({"/usr/bin/dbus-send", "--session", "--print-reply",
                "--dest=org.freedesktop.secrets", "/org/freedesktop/secrets",
                "org.freedesktop.Secret.Service.Lock",
                "array:objpath:/org/freedesktop/secrets/collection/login"});
}

long long keyring_invalidations(const std::filesystem::path& socket) {
    const Result r = run({bin("hostkeeper"), "--socket", socket.string(), "status", "--json"});
    if (r.exit_code != 0) return -1;
    return nlohmann::json::parse(r.out).at("credentials").value("invalidations", 0LL);
}

void await_invalidation(const std::filesystem::path& socket, long long before) {
    (void)wait_until([&] { return keyring_invalidations(socket) > before; },
                     std::chrono::seconds(5));
}

Result lock_login_collection_seen_by(const std::filesystem::path& socket) {
    const long long before = keyring_invalidations(socket);
    Result locked = lock_login_collection();
    if (locked.exit_code == 0) await_invalidation(socket, before);
    return locked;
}

bool unlock_login_collection() {
    // gnome-keyring's control protocol (daemon/control/gkd-control-server.c):
    // one NUL byte (the peer's credentials are checked), then a packet of
    // big-endian u32 length, u32 op (1: unlock), u32 length + password; the
    // answer is u32 length, u32 result (0: ok).
    const char* runtime = std::getenv("XDG_RUNTIME_DIR");
    if (runtime == nullptr) return false;
    const std::string path = std::string(runtime) + "/keyring/control";
    const int fd = ::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (fd < 0) return false;
    sockaddr_un address{};
    address.sun_family = AF_UNIX;
    std::strncpy(address.sun_path, path.c_str(), sizeof address.sun_path - 1);
    bool ok = false;
    if (::connect(fd, reinterpret_cast<const sockaddr*>(&address), sizeof address) == 0) {
        const std::string password = kPassword;
        std::string packet(1, '\0');
        put_u32(packet, static_cast<std::uint32_t>(12 + password.size()));
        put_u32(packet, 1);
        put_u32(packet, static_cast<std::uint32_t>(password.size()));
        packet += password;
        unsigned char answer[8] = {};
        std::size_t got = 0;
        if (::write(fd, packet.data(), packet.size()) == static_cast<ssize_t>(packet.size())) {
            ssize_t n = 0;
            while (got < sizeof answer && (n = ::read(fd, answer + got, sizeof answer - got)) > 0) {
                got += static_cast<std::size_t>(n);
            }
        }
        ok = got == sizeof answer && answer[4] == 0 && answer[5] == 0 && answer[6] == 0 &&
             answer[7] == 0;
    }
    ::close(fd);
    return ok;
}

Result secret_tool_store(const std::string& host, const std::string& secret) {
    RunOptions options;
    options.input = secret;
    options.timeout = std::chrono::seconds(10);
    return run({"/usr/bin/secret-tool", "store", "--label=edited by hand: " + host, "xdg:schema",
                "io.hostkeeper.Credentials", "host", host},
               options);
}

Result secret_tool_clear(const std::string& host) {
    RunOptions options;
    options.timeout = std::chrono::seconds(10);
    return run(
        {"/usr/bin/secret-tool", "clear", "xdg:schema", "io.hostkeeper.Credentials", "host", host},
        options);
}

pid_t keyring_pid() {
    if (restarted) return *restarted;
    const char* pid = std::getenv("HK_KEYRING_PID");
    if (pid == nullptr)
        throw std::runtime_error("HK_KEYRING_PID is not set: run through keyring-env.sh");
    return static_cast<pid_t>(std::strtol(pid, nullptr, 10));
}

void kill_keyring(int signal) {
    const pid_t pid = keyring_pid();
    ::kill(pid, SIGCONT);
    ::kill(pid, signal);
    if (restarted) {
        ::waitpid(pid, nullptr, 0);
        restarted.reset();
    }
    if (!wait_until([] { return !secrets_owned(); }, std::chrono::seconds(10))) {
        throw std::runtime_error("the keyring daemon did not leave the bus");
    }
}

namespace {
void start_keyring_with(bool unlock) {
    RunOptions options;
    std::vector<std::string> argv{"/usr/bin/gnome-keyring-daemon", "--foreground",
                                  "--components=secrets"};
    if (unlock) {
        options.input = kPassword;
        argv.emplace_back("--unlock");
    }
    Spawned keyring = spawn(argv, options);
    ::close(keyring.out_fd);
    ::close(keyring.err_fd);
    restarted = keyring.pid;
    const bool ready = wait_until(
        [] {
            if (!secrets_owned()) return false;
            const Result alias =
                bus_call({"--dest=org.freedesktop.secrets", "/org/freedesktop/secrets",
                          "org.freedesktop.Secret.Service.ReadAlias", "string:default"});
            return alias.out.find("/org/freedesktop/secrets/collection/") != std::string::npos;
        },
        std::chrono::seconds(10));
    if (!ready) throw std::runtime_error("the restarted keyring daemon did not become ready");
}
}  // namespace

void start_keyring() {
    start_keyring_with(true);
}

void start_keyring_locked() {
    start_keyring_with(false);
}

}  // namespace hostkeeper::it
