// Tokens from commands end to end: real shell scripts in the test's HOME as
// token_command, the real daemon and helper. No expired token is served, 20
// concurrent gets share one run per lifetime, the next token is fetched
// ahead of the current one's expiry, and failures reach the helper's stderr.
// [token-trust] (root): programs another uid may replace are refused, a
// timed-out command leaves no process behind, and in a user namespace that
// does not map root the overflow uid is accepted only above the home.
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <catch2/catch.hpp>
#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <functional>
#include <map>
#include <mutex>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "harness.hpp"

namespace test_token_commands {

using namespace hostkeeper::it;
namespace fs = std::filesystem;
using namespace std::chrono_literals;

namespace {

const std::string kHost = "tokens.example.com";

double wall_seconds() {
    return std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch())
        .count();
}

// A script of the test's own under $HOME, executable by the user only.
fs::path script(const std::string& name, const std::string& body) {
    const fs::path dir = fs::path(std::getenv("HOME")) / "token-commands";
    fs::create_directories(dir);
    const fs::path path = dir / name;
    std::ofstream(path) << "#!/bin/sh\n" << body;
    fs::permissions(path, fs::perms(0700));
    return path;
}

// A daemon whose config.toml gives kHost `command`; `mode`: the file's.
struct World {
    explicit World(const fs::path& command, const std::string& extra = "",
                   fs::perms mode = fs::perms(0600))
        : socket(fresh_socket()), config(socket.parent_path() / "config.toml") {
        std::ofstream(config) << "[hosts.\"" << kHost << "\"]\ntoken_command = [\""
                              << command.string() << "\"]\n"
                              << extra;
        fs::permissions(config, mode);
        daemon.emplace(socket, std::vector<std::string>{"--config", config.string()});
    }
    Result get() const { return helper(socket, {"get", kHost}); }
    nlohmann::json command_state() const {
        const Result r = run({bin("hostkeeper"), "--socket", socket.string(), "status", "--json"});
        const auto status = nlohmann::json::parse(r.out);
        for (const auto& entry : status["credentials"]["commands"])
            if (entry["host"] == kHost) return entry;
        return nullptr;
    }

    fs::path socket;
    fs::path config;
    std::optional<Daemon> daemon;
};

// The tokens the caching script issued: token -> when (wall clock seconds).
std::map<std::string, double> issued(const fs::path& file) {
    std::map<std::string, double> out;
    std::istringstream lines(read_file(file));
    std::string token;
    double when = 0;
    while (lines >> token >> when) out[token] = when;
    return out;
}

}  // namespace

TEST_CASE(
    "a token with a 3 s lifetime under 20 concurrent gets: never expired, one run per "
    "lifetime, fetched ahead",
    "[token-commands]") {
    const fs::path state = fs::path(std::getenv("HOME")) / ".cache" / "hk-token-script";
    fs::remove_all(state);
    // Keeps its state under HOME, as the AWS CLI keeps its cache in ~/.aws.
    const fs::path command = script("caching.sh", R"SH(dir="$HOME/.cache/hk-token-script"
mkdir -p "$dir"
n=$(( $(cat "$dir/runs" 2>/dev/null || echo 0) + 1 ))
echo "$n" > "$dir/runs"
echo "tok-$n $(date +%s.%N)" >> "$dir/issued"
printf '{"token":"tok-%s","expires_in":3}\n' "$n"
)SH");
    const World world(command);
    struct Served {
        double started;
        std::string token;
    };
    std::mutex mutex;
    std::vector<Served> served;
    int failures = 0;
    const double begin = wall_seconds();
    const auto runs = [&] { return issued(state / "issued").size(); };
    std::vector<std::thread> threads;
    for (int i = 0; i < 20; ++i) {
        threads.emplace_back([&] {
            while (runs() < 4 && wall_seconds() - begin < 120) {
                const double started = wall_seconds();
                const Result r = world.get();
                const std::lock_guard lock(mutex);
                if (r.exit_code != 0) {
                    ++failures;
                    continue;
                }
                served.push_back({started, nlohmann::json::parse(r.out).value("token", "")});
            }
        });
    }
    for (std::thread& t : threads) t.join();
    const double elapsed = wall_seconds() - begin;
    const std::map<std::string, double> tokens = issued(state / "issued");
    REQUIRE(tokens.size() >= 4);
    CHECK(failures == 0);
    // No get that began after a token's expiry (as the script counted it) got that token.
    for (const Served& s : served) {
        INFO(s.token << " asked at " << s.started);
        REQUIRE(tokens.count(s.token) == 1);
        CHECK(s.started < tokens.at(s.token) + 3.0);
    }
    // One run per lifetime, however many gets: at most one per 2.7 s (the
    // refresh starts with a tenth of the lifetime left), and the first.
    CHECK(static_cast<double>(tokens.size()) <= elapsed / 2.7 + 2);
    CHECK(served.size() > 4 * tokens.size());
    // Fetched ahead: some token was issued before the one it replaced expired.
    bool ahead = false;
    for (std::size_t n = 1; n < tokens.size(); ++n) {
        const double previous = tokens.at("tok-" + std::to_string(n));
        const double next = tokens.at("tok-" + std::to_string(n + 1));
        ahead = ahead || next < previous + 3.0;
    }
    CHECK(ahead);
    const auto state_json = world.command_state();
    CHECK(state_json["runs"].get<int>() >= 4);
    CHECK_FALSE(state_json.contains("last_error"));
    CHECK(world.daemon->log().find("tok-") == std::string::npos);
}

TEST_CASE("a bare token: the helper, and hostkeeper token, get it", "[token-commands]") {
    const World world(script("bare.sh", "echo tok-bare-123\n"), "token_ttl = \"1h\"\n");
    const Result got = world.get();
    REQUIRE(got.exit_code == 0);
    CHECK(got.out == "{\"token\":\"tok-bare-123\"}\n");
    const Result token =
        run({bin("hostkeeper"), "--socket", world.socket.string(), "token", kHost, "--force"});
    CHECK(token.exit_code == 0);
    CHECK(token.out == "tok-bare-123\n");
    const auto state = world.command_state();
    CHECK(state["runs"] == 1);
    CHECK(state["expires_in_s"].get<long long>() > 3500);
}

TEST_CASE("a failing command: the helper exits non-zero with its first line of stderr",
          "[token-commands]") {
    const World world(script("failing.sh",
                             "echo 'The SSO session has expired: run aws sso "
                             "login' >&2\necho more >&2\nexit 1\n"));
    const Result got = world.get();
    CHECK(got.exit_code == 1);
    CHECK(got.out.empty());
    CHECK_THAT(got.err, Catch::Contains("token_command for " + kHost) &&
                            Catch::Contains("failed (exit 1): The SSO session has expired: run "
                                            "aws sso login"));
    CHECK_THAT(world.command_state()["last_error"].get<std::string>(),
               Catch::Contains("The SSO session has expired"));
}

TEST_CASE("a command that hangs is stopped at token_command_timeout", "[token-commands]") {
    const World world(script("hanging.sh", "echo started >&2\nsleep 600\n"),
                      "token_command_timeout = 1\n");
    const Result got = world.get();
    CHECK(got.exit_code == 1);
    CHECK_THAT(got.err,
               Catch::Contains("did not finish within 1s (token_command_timeout): started"));
    CHECK(helper(world.socket, {"get", "other.example.com"}).exit_code == 0);
}

TEST_CASE("a command that prints garbage is an error that does not quote it", "[token-commands]") {
    const World world(script("garbage.sh", "printf '<html>secret page</html>\\nmore\\n'\n"));
    const Result got = world.get();
    CHECK(got.exit_code == 1);
    CHECK_THAT(got.err, Catch::Contains("printed more than one line"));
    CHECK(got.err.find("secret page") == std::string::npos);
}

TEST_CASE("a group-writable config.toml: commands refused with the reason", "[token-commands]") {
    const fs::path ran = fs::path(std::getenv("HOME")) / "refused-ran";
    fs::remove(ran);
    const World world(script("refused.sh", "touch \"$HOME/refused-ran\"\necho tok\n"), "",
                      fs::perms(0660));
    const Result got = world.get();
    CHECK(got.exit_code == 1);
    CHECK_THAT(got.err, Catch::Contains("not run: " + world.config.string() +
                                        " is group-writable (chmod g-w"));
    CHECK_FALSE(fs::exists(ran));
}

TEST_CASE("hostkeeper list shows a host that only has a token_command, with its state",
          "[token-commands]") {
    const World world(script("listed.sh", "echo tok-listed\n"), "token_ttl = \"1h\"\n");
    const std::string socket = world.socket.string();
    const Result before = run({bin("hostkeeper"), "--socket", socket, "list"});
    CHECK(before.exit_code == 0);
    CHECK_THAT(before.out, Catch::Contains("Tokens from a command (token_command):\n  " + kHost +
                                           "  runs 0, no token held"));
    REQUIRE(world.get().exit_code == 0);
    const Result text = run({bin("hostkeeper"), "--socket", socket, "list"});
    CHECK_THAT(text.out, Catch::Contains("  " + kHost + "  runs 1, token expires in "));
    const Result json = run({bin("hostkeeper"), "--socket", socket, "list", "--json"});
    REQUIRE(json.exit_code == 0);
    const auto document = nlohmann::json::parse(json.out);
    REQUIRE(document["commands"].size() == 1);
    CHECK(document["commands"][0]["host"] == kHost);
    CHECK(document["commands"][0]["runs"] == 1);
    CHECK(document["commands"][0]["expires_in_s"].get<long long>() > 3500);
    CHECK(json.out.find("tok-listed") == std::string::npos);
}

TEST_CASE("stopping the daemon ends a command that is running", "[token-commands]") {
    const fs::path pid_file = fs::path(std::getenv("HOME")) / "running-command.pid";
    fs::remove(pid_file);
    World world(script("slow.sh",
                       "echo $$ > \"$HOME/running-command.pid.new\"\n"
                       "mv \"$HOME/running-command.pid.new\" \"$HOME/running-command.pid\"\n"
                       "exec sleep 600\n"),
                "token_command_timeout = \"10m\"\n");
    Result got;
    std::thread asking([&] { got = world.get(); });
    REQUIRE(wait_until([&] { return fs::exists(pid_file); }, 30s));
    const pid_t command = std::stoi(read_file(pid_file));
    CHECK(process_alive(command));
    CHECK(world.daemon->stop() == 0);
    asking.join();
    CHECK_FALSE(process_alive(command));  // ended by the daemon, not left to its timeout
    CHECK(got.exit_code != 0);
}

namespace {

// A directory another uid owns, mode 0777 (as a careless shared /tmp/x),
// holding an executable of that uid: what an attacker leaves for the victim.
struct ForeignDir {
    static constexpr uid_t kOther = 65533;
    ForeignDir() {
        char pattern[] = "/tmp/hk-foreign.XXXXXX";
        root = ::mkdtemp(pattern);
        ::chmod(root.c_str(), 0755);
        dir = root / "shared";
        fs::create_directory(dir);
        ::chmod(dir.c_str(), 0777);
        REQUIRE(::chown(dir.c_str(), kOther, kOther) == 0);
    }
    ~ForeignDir() { fs::remove_all(root); }
    ForeignDir(const ForeignDir&) = delete;
    ForeignDir& operator=(const ForeignDir&) = delete;
    // The other uid's program `name`, which records that it ran and prints a token.
    fs::path program(const std::string& name) const {
        const fs::path path = dir / name;
        std::ofstream(path) << "#!/bin/sh\ntouch " << ran().string()
                            << "\necho '{\"token\":\"ATTACKER-TOKEN\"}'\n";
        ::chmod(path.c_str(), 0755);
        REQUIRE(::chown(path.c_str(), kOther, kOther) == 0);
        return path;
    }
    fs::path ran() const { return root / "attacker-ran"; }
    fs::path root;
    fs::path dir;
};

// $PATH set to `value` while it lives (the daemon takes the test's environment).
struct PathSet {
    explicit PathSet(const std::string& value) : old(std::getenv("PATH")) {
        ::setenv("PATH", value.c_str(), 1);
    }
    ~PathSet() { ::setenv("PATH", old.c_str(), 1); }
    PathSet(const PathSet&) = delete;
    PathSet& operator=(const PathSet&) = delete;
    std::string old;
};

// The processes (not zombies) whose command line holds `marker`.
std::vector<pid_t> processes_with(const std::string& marker) {
    std::vector<pid_t> found;
    for (const auto& entry : fs::directory_iterator("/proc")) {
        const std::string name = entry.path().filename().string();
        if (name.find_first_not_of("0123456789") != std::string::npos) continue;
        std::ifstream in(entry.path() / "cmdline");
        std::string cmdline((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
        std::replace(cmdline.begin(), cmdline.end(), '\0', ' ');
        if (cmdline.find(marker) != std::string::npos) found.push_back(std::stoi(name));
    }
    return found;
}

}  // namespace

TEST_CASE("a command in a world-writable directory of another uid is refused, naming it",
          "[token-trust]") {
    const ForeignDir foreign;
    const fs::path program = foreign.program("token.sh");
    const World world(program);
    const Result got = world.get();
    CHECK(got.exit_code == 1);
    CHECK_THAT(got.err, Catch::Contains("not run: " + program.string() + " is not trusted: " +
                                        foreign.dir.string() + " is owned by uid 65533"));
    CHECK(got.out.find("ATTACKER-TOKEN") == std::string::npos);
    CHECK_FALSE(fs::exists(foreign.ran()));
    const auto state = world.command_state();
    CHECK_THAT(state["last_error"].get<std::string>(), Catch::Contains(program.string()));
}

TEST_CASE("a bare name found first in an untrusted PATH entry is refused", "[token-trust]") {
    const ForeignDir foreign;
    const fs::path program = foreign.program("hk-token-tool");
    // The same name in a trusted directory later in PATH is not reached.
    const fs::path good = script("hk-token-tool", "echo tok-good\n");
    std::optional<World> world;
    {
        const PathSet path(foreign.dir.string() + ":" + good.parent_path().string() +
                           ":/usr/bin:/bin");
        world.emplace(fs::path("hk-token-tool"));
    }
    const Result got = world->get();
    CHECK(got.exit_code == 1);
    CHECK_THAT(got.err, Catch::Contains("not run: " + program.string() + " is not trusted: " +
                                        foreign.dir.string() + " is owned by uid 65533"));
    CHECK_FALSE(fs::exists(foreign.ran()));
    // Without that program, the trusted one is found.
    fs::remove(program);
    REQUIRE(
        run({bin("hostkeeper"), "--socket", world->socket.string(), "flush", kHost}).exit_code ==
        0);
    CHECK(world->get().out == "{\"token\":\"tok-good\"}\n");
}

TEST_CASE("a timed-out command that forked sleeps leaves no process of its group",
          "[token-trust]") {
    const std::string marker = "hk-marker-" + std::to_string(::getpid());
    const World world(script("forking.sh", "sh -c 'sleep 7301; true' " + marker +
                                               " &\nsh -c 'sleep 7302; true' " + marker +
                                               " &\necho forked >&2\nwait\n"),
                      "token_command_timeout = 1\n");
    const Result got = world.get();
    CHECK(got.exit_code == 1);
    CHECK_THAT(got.err,
               Catch::Contains("did not finish within 1s (token_command_timeout): forked"));
    CHECK(got.err.find("remain") == std::string::npos);
    // Checked as the error is answered: the daemon waited until the group was gone.
    CHECK(processes_with(marker).empty());
}

TEST_CASE(
    "in a user namespace that does not map root, the overflow uid is accepted only above the "
    "home",
    "[token-trust]") {
    constexpr uid_t kUser = 65532;
    constexpr uid_t kOther = 65533;
    char pattern[] = "/tmp/hk-userns.XXXXXX";
    const fs::path root = ::mkdtemp(pattern);
    ::chmod(root.c_str(), 0755);
    const fs::path hostkeeperd = root / "hostkeeperd";  // the build tree may be closed to others
    fs::copy_file(bin("hostkeeperd"), hostkeeperd);
    ::chmod(hostkeeperd.c_str(), 0755);
    const fs::path home = root / "home" / "u";
    fs::create_directories(home);
    ::chmod(home.parent_path().c_str(), 0755);
    const auto own = [&](const fs::path& path, uid_t uid, mode_t mode) {
        REQUIRE(::chown(path.c_str(), uid, uid) == 0);
        REQUIRE(::chmod(path.c_str(), mode) == 0);
    };
    own(home, kUser, 0700);
    // The user's config.toml in `dir` (the user's, 0700).
    const auto config_in = [&](const fs::path& dir) {
        fs::create_directories(dir);
        own(dir, kUser, 0700);
        const fs::path file = dir / "config.toml";
        std::ofstream(file) << "[hosts.\"" << kHost << "\"]\ntoken_command = [\"/bin/true\"]\n";
        own(file, kUser, 0600);
        return file;
    };
    const fs::path other = root / "other";  // another uid's directory: the overflow uid inside
    fs::create_directory(other);
    own(other, kOther, 0755);
    const fs::path outside = config_in(other / "hk");
    fs::create_directory(home / ".config");
    own(home / ".config", kUser, 0700);
    const fs::path inside = config_in(home / ".config" / "hostkeeper");
    const auto in_namespace = [&](std::vector<std::string> argv) {
        std::vector<std::string> full{"/usr/bin/setpriv",
                                      "--reuid=" + std::to_string(kUser),
                                      "--regid=" + std::to_string(kUser),
                                      "--clear-groups",
                                      "/usr/bin/env",
                                      "-i",
                                      "PATH=/usr/bin:/bin",
                                      "HOME=" + home.string(),
                                      "/usr/bin/unshare",
                                      "--user",
                                      "--map-current-user"};
        full.insert(full.end(), argv.begin(), argv.end());
        return run(full);
    };
    // Root is not mapped there: root's directories show as the overflow uid too.
    const Result map = in_namespace({"/bin/cat", "/proc/self/uid_map"});
    REQUIRE(map.exit_code == 0);
    CHECK(map.out.find(" 0 ") == std::string::npos);
    const Result refused =
        in_namespace({hostkeeperd.string(), "--check-config", "--config", outside.string()});
    CHECK(refused.exit_code == 0);
    CHECK_THAT(refused.out,
               Catch::Contains(other.string() + " is owned by uid 65534 (the overflow uid") &&
                   Catch::Contains("another user could choose the programs"));
    // Under the home, with root's directories (/, /tmp, ROOT, ROOT/home) above it: trusted.
    const Result trusted =
        in_namespace({hostkeeperd.string(), "--check-config", "--config", inside.string()});
    CHECK(trusted.exit_code == 0);
    CHECK_THAT(trusted.out, Catch::Contains("the configuration is valid"));
    CHECK(trusted.out.find("is owned by") == std::string::npos);
    fs::remove_all(root);
}

TEST_CASE("docker-credential-hostkeeper answers with the command's token under token_username",
          "[token-commands]") {
    const fs::path command = script("ecr.sh", "echo ecr-token-1\n");
    const World world(command, "token_username = \"AWS\"\n");
    const auto docker_get = [&](const std::string& server) {
        RunOptions options;
        options.input = server;
        options.env["HOSTKEEPER_SOCKET"] = world.socket.string();
        return run({bin("docker-credential-hostkeeper"), "get"}, options);
    };
    const Result got = docker_get(kHost);
    CHECK(got.exit_code == 0);
    CHECK(nlohmann::json::parse(got.out) ==
          nlohmann::json{{"ServerURL", kHost}, {"Username", "AWS"}, {"Secret", "ecr-token-1"}});
    // OpenTofu's spelling of the same registry finds it too.
    const Result tofu = docker_get("https://" + kHost);
    CHECK(tofu.exit_code == 0);
    CHECK_THAT(tofu.out, Catch::Contains("\"Secret\":\"ecr-token-1\""));
    // Another server: not found, as Docker expects it.
    const Result other = docker_get("other.example.com");
    CHECK(other.exit_code == 1);
    CHECK_THAT(other.out, Catch::Contains("credentials not found in native keychain"));
    // The token never reaches the daemon's log.
    CHECK(world.daemon->log().find("ecr-token-1") == std::string::npos);
}

TEST_CASE("docker-credential-hostkeeper: an item under either spelling comes before the command",
          "[token-commands]") {
    const fs::path ran = fs::path(std::getenv("HOME")) / "token-commands" / "ecr-ran";
    fs::remove(ran);
    const fs::path command =
        script("ecr-counted.sh", "echo run >> '" + ran.string() + "'\necho ecr-token-2\n");
    const World world(command, "token_username = \"AWS\"\n");
    const auto docker = [&](const std::string& verb, const std::string& input) {
        RunOptions options;
        options.input = input;
        options.env["HOSTKEEPER_SOCKET"] = world.socket.string();
        return run({bin("docker-credential-hostkeeper"), verb}, options);
    };
    const std::string tofu = "https://" + kHost;
    const nlohmann::json item{{"ServerURL", tofu}, {"Username", "robot"}, {"Secret", "stored-2"}};
    REQUIRE(docker("store", item.dump()).exit_code == 0);
    // Docker's spelling (the bare host) finds the item OpenTofu's spelling stored.
    const Result bare = docker("get", kHost);
    CHECK(bare.exit_code == 0);
    CHECK(nlohmann::json::parse(bare.out) ==
          nlohmann::json{{"ServerURL", kHost}, {"Username", "robot"}, {"Secret", "stored-2"}});
    const Result own = docker("get", tofu);
    CHECK(own.exit_code == 0);
    CHECK_THAT(own.out, Catch::Contains("\"Secret\":\"stored-2\""));
    CHECK_FALSE(fs::exists(ran));  // the command was not run while the item answers
    // With the item erased, the command answers for both spellings.
    REQUIRE(docker("erase", tofu).exit_code == 0);
    const Result from_command = docker("get", kHost);
    CHECK(from_command.exit_code == 0);
    CHECK_THAT(from_command.out, Catch::Contains("\"Secret\":\"ecr-token-2\""));
    CHECK(fs::exists(ran));
    const std::string log = world.daemon->log();
    CHECK(log.find("stored-2") == std::string::npos);
    CHECK(log.find("ecr-token-2") == std::string::npos);
}

}  // namespace test_token_commands
