// Two real local users: an attacker who gets to the victim's socket path
// first, or puts a listener of theirs where the victim's client looks. The
// victim's client must send nothing and say why. Needs root (useradd).
#include <pwd.h>
#include <signal.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <catch2/catch.hpp>
#include <filesystem>
#include <sstream>
#include <string>

#include "harness.hpp"

namespace test_two_users {

using namespace hostkeeper::it;
namespace fs = std::filesystem;
using namespace std::chrono_literals;

namespace {

// A throw-away system user, removed again when the test ends.
class LocalUser {
  public:
    explicit LocalUser(const std::string& role) : name_("hk" + role + std::to_string(::getpid())) {
        const Result added = run({"/usr/sbin/useradd", "--system", "--no-create-home", "--home-dir",
                                  "/nonexistent", "--shell", "/usr/sbin/nologin", name_});
        if (added.exit_code != 0) throw std::runtime_error("useradd " + name_ + ": " + added.err);
        const passwd* entry = ::getpwnam(name_.c_str());
        if (entry == nullptr) throw std::runtime_error("no passwd entry for " + name_);
        uid_ = entry->pw_uid;
        gid_ = entry->pw_gid;
    }
    LocalUser(const LocalUser&) = delete;
    LocalUser& operator=(const LocalUser&) = delete;
    ~LocalUser() { run({"/usr/sbin/userdel", name_}); }
    uid_t uid() const { return uid_; }
    // argv prefixed to run as this user, with a bare environment.
    std::vector<std::string> as(std::vector<std::string> argv) const {
        std::vector<std::string> out{"/usr/bin/setpriv",
                                     "--reuid=" + std::to_string(uid_),
                                     "--regid=" + std::to_string(gid_),
                                     "--clear-groups",
                                     "/usr/bin/env",
                                     "-i",
                                     "PATH=/usr/bin:/bin",
                                     "HOME=/nonexistent"};
        out.insert(out.end(), argv.begin(), argv.end());
        return out;
    }

  private:
    std::string name_;
    uid_t uid_ = 0;
    gid_t gid_ = 0;
};

// A directory both users can read, holding a copy of the helper (the build
// tree may not be reachable by other users).
struct Shared {
    Shared() {
        char pattern[] = "/tmp/hk-2uid.XXXXXX";
        root = ::mkdtemp(pattern);
        ::chmod(root.c_str(), 0755);
        helper = root / "terraform-credentials-hostkeeper";
        fs::copy_file(bin("terraform-credentials-hostkeeper"), helper);
        ::chmod(helper.c_str(), 0755);
        // The attacker's own corner: their directories and their log of what they received.
        attacker = root / "attacker";
        ::mkdir(attacker.c_str(), 0777);
        ::chmod(attacker.c_str(), 0777);
        log = attacker / "impostor.log";
    }
    Shared(const Shared&) = delete;
    Shared& operator=(const Shared&) = delete;
    ~Shared() { fs::remove_all(root); }
    fs::path root;
    fs::path helper;
    fs::path attacker;
    fs::path log;
};

class Impostor {
  public:
    Impostor(const LocalUser& attacker, const std::vector<std::string>& args) {
        std::vector<std::string> argv{std::string(HK_SOURCE_DIR) + "/tests/support/impostor.py"};
        argv.insert(argv.end(), args.begin(), args.end());
        spawned_ = spawn(attacker.as(argv));
    }
    Impostor(const Impostor&) = delete;
    Impostor& operator=(const Impostor&) = delete;
    ~Impostor() {
        ::kill(spawned_.pid, SIGKILL);
        spawned_.wait();
    }

  private:
    Spawned spawned_;
};

}  // namespace

TEST_CASE("another user's directory at the fallback socket path gets nothing", "[two-uids]") {
    const LocalUser victim("v");
    const LocalUser attacker("a");
    const Shared shared;
    // No XDG_RUNTIME_DIR (cron, ssh without pam_systemd, env -i): /tmp/hostkeeper-UID/socket.
    const fs::path squatted = "/tmp/hostkeeper-" + std::to_string(victim.uid());
    fs::remove_all(squatted);
    const fs::path& log = shared.log;
    const fs::path attacker_dir = shared.attacker / "d";

    SECTION("a directory of theirs, mode 0777") {
        const Impostor impostor(attacker, {squatted.string(), "socket", log.string()});
        REQUIRE(wait_until([&] { return fs::exists(squatted / "socket"); }, 10s));
        const Result store =
            run(victim.as({shared.helper.string(), "--timeout=5", "store", "app.example.com"}),
                RunOptions{std::string(R"({"token":"victim-secret-token"})"), {}, 30s});
        CHECK(store.exit_code == 4);
        CHECK_THAT(store.err,
                   Catch::Contains("socket directory " + squatted.string() + " is owned by uid " +
                                   std::to_string(attacker.uid()) + ", not by you"));
        const Result get =
            run(victim.as({shared.helper.string(), "--timeout=5", "get", "app.example.com"}));
        CHECK(get.exit_code == 4);
        CHECK(get.out.empty());  // not the impostor's token
    }
    SECTION("a symbolic link to a directory of theirs") {
        const Impostor impostor(attacker, {attacker_dir.string(), "socket", log.string(),
                                           "--symlink-from", squatted.string()});
        REQUIRE(wait_until([&] { return fs::exists(squatted / "socket"); }, 10s));
        const Result store =
            run(victim.as({shared.helper.string(), "--timeout=5", "store", "app.example.com"}),
                RunOptions{std::string(R"({"token":"victim-secret-token"})"), {}, 30s});
        CHECK(store.exit_code == 4);
        CHECK_THAT(store.err, Catch::Contains("is not a directory (or is a symbolic link)"));
        const Result get =
            run(victim.as({shared.helper.string(), "--timeout=5", "get", "app.example.com"}));
        CHECK(get.exit_code == 4);
        CHECK(get.out.empty());
    }
    // The impostor was never even connected to (it logs every connection:
    // the second test case shows it can).
    CHECK_FALSE(fs::exists(log));
    fs::remove_all(squatted);
}

TEST_CASE("a listener of another user in the victim's own private directory gets nothing",
          "[two-uids]") {
    const LocalUser victim("v");
    const LocalUser attacker("a");
    const Shared shared;
    const fs::path& log = shared.log;
    const fs::path attacker_dir = shared.attacker / "d";
    {
        const Impostor impostor(attacker, {attacker_dir.string(), "socket", log.string()});
        REQUIRE(wait_until([&] { return fs::exists(attacker_dir / "socket"); }, 10s));
        // The victim's directory is right (theirs, 0700); the socket in it is
        // bound to the attacker's listener (a unix socket follows its inode).
        const fs::path private_dir = shared.root / "victim";
        ::mkdir(private_dir.c_str(), 0700);
        REQUIRE(::chown(private_dir.c_str(), victim.uid(), static_cast<gid_t>(-1)) == 0);
        fs::rename(attacker_dir / "socket", private_dir / "socket");

        const Result store =
            run(victim.as({"HOSTKEEPER_SOCKET=" + (private_dir / "socket").string(),
                           shared.helper.string(), "--timeout=5", "store", "app.example.com"}),
                RunOptions{std::string(R"({"token":"victim-secret-token"})"), {}, 30s});
        CHECK(store.exit_code == 4);
        CHECK_THAT(store.err, Catch::Contains("runs as uid " + std::to_string(attacker.uid()) +
                                              ", not as you"));
        const Result get =
            run(victim.as({"HOSTKEEPER_SOCKET=" + (private_dir / "socket").string(),
                           shared.helper.string(), "--timeout=5", "get", "app.example.com"}));
        CHECK(get.exit_code == 4);
        CHECK(get.out.empty());
        // Both connections logged before the impostor is stopped (it logs
        // each after the client hangs up).
        REQUIRE(wait_until(
            [&] {
                const std::string text = fs::exists(log) ? read_file(log) : std::string();
                return std::count(text.begin(), text.end(), '\n') >= 2;
            },
            5s));
    }
    // It saw connections, and not one byte of them.
    const std::string seen = read_file(log);
    CAPTURE(seen);
    std::istringstream lines(seen);
    int connections = 0;
    for (std::string line; std::getline(lines, line); ++connections)
        CHECK(line == "connection 0 bytes: ");
    CHECK(connections == 2);
}

}  // namespace test_two_users
