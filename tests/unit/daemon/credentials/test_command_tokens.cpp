// Tokens from commands: kept until they expire, refreshed ahead, one run for
// concurrent gets, failures answered as errors; with a stand-in runner and
// clocks, and the real runner on real programs.
#include <unistd.h>

#include <boost/asio/co_spawn.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/thread_pool.hpp>
#include <catch2/catch.hpp>
#include <chrono>
#include <csignal>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "daemon/credentials/command_tokens.hpp"
#include "proto/error.hpp"

namespace test_command_tokens {

using namespace hostkeeper;
using namespace hostkeeper::daemon::credentials;
using namespace std::chrono_literals;
namespace asio = boost::asio;
using steady = std::chrono::steady_clock;
using std::chrono::system_clock;

namespace {

// What the stand-in command prints next, and how often it ran.
struct Script {
    std::mutex mutex;
    std::string output = "tok-1\n";
    int exit_code = 0;
    std::string error_line;
    int runs = 0;

    CommandRun operator()(const TokenCommand&) {
        const std::lock_guard lock(mutex);
        ++runs;
        CommandRun run;
        run.exit_code = exit_code;
        run.output = proto::Secret(output);
        run.first_error_line = error_line;
        return run;
    }
};

TokenCommandOptions one_host(std::string refused = {}) {
    TokenCommandOptions options;
    options.hosts["h.example"] = TokenCommand{{"/bin/tok"}, 100s, 5s, {}, {}};
    options.refused = std::move(refused);
    return options;
}

struct Fixture {
    explicit Fixture(TokenCommandOptions options = one_host())
        : tokens(
              io.get_executor(), pool.get_executor(), std::move(options),
              [this](const TokenCommand& c) { return script(c); }, [this] { return now; },
              [this] { return wall; }) {}
    ~Fixture() { pool.join(); }

    // Runs the io_context until every get started so far is answered.
    std::vector<std::string> gets(int count) {
        std::vector<std::string> answers(static_cast<std::size_t>(count));
        for (std::string& answer : answers) {
            asio::co_spawn(io, tokens.get("h.example"),
                           [&answer](std::exception_ptr e, proto::Secret s) {
                               if (!e) {
                                   answer = std::string(s.view());
                                   return;
                               }
                               try {
                                   std::rethrow_exception(e);
                               } catch (const proto::Error& error) {
                                   answer = std::string("error: ") + error.what();
                               }
                           });
        }
        io.restart();
        io.run();
        return answers;
    }
    std::string get() { return gets(1).front(); }

    Script script;
    steady::time_point now = steady::time_point{} + 1000h;
    system_clock::time_point wall = system_clock::time_point{} + 20000h;
    asio::io_context io;
    asio::thread_pool pool{2};
    CommandTokens tokens;
};

}  // namespace

TEST_CASE("a bare token is kept for token_ttl, then the command runs again",
          "[daemon][credentials]") {
    Fixture f;
    CHECK(f.get() == R"({"token":"tok-1"})");
    f.now += 50s;
    CHECK(f.get() == R"({"token":"tok-1"})");
    CHECK(f.script.runs == 1);
    f.script.output = "tok-2";
    f.now += 50s;  // at its expiry: never served
    CHECK(f.get() == R"({"token":"tok-2"})");
    CHECK(f.script.runs == 2);
    const CommandTokenState state = f.tokens.states().at("h.example");
    CHECK(state.runs == 2);
    CHECK(state.expires == f.now + 100s);
    CHECK(state.last_error.empty());
}

TEST_CASE("concurrent gets run the command once", "[daemon][credentials]") {
    Fixture f;
    const std::vector<std::string> answers = f.gets(20);
    for (const std::string& answer : answers) CHECK(answer == R"({"token":"tok-1"})");
    CHECK(f.script.runs == 1);
}

TEST_CASE("a tenth of the lifetime left: served at once, refreshed in the background",
          "[daemon][credentials]") {
    Fixture f;
    f.script.output = R"({"token":"a","expires_in":200})";
    CHECK(f.get() == R"({"token":"a"})");
    f.now += 179s;
    CHECK(f.get() == R"({"token":"a"})");
    CHECK(f.script.runs == 1);
    f.script.output = R"({"token":"b","expires_in":200})";
    f.now += 1s;                           // 20 s left: a tenth
    CHECK(f.get() == R"({"token":"a"})");  // the refresh it started ran meanwhile
    CHECK(f.script.runs == 2);
    CHECK(f.get() == R"({"token":"b"})");
    CHECK(f.tokens.states().at("h.example").expires == f.now + 200s);
}

TEST_CASE("refresh ahead is at most 5 minutes before expiry; expires_at uses the wall clock",
          "[daemon][credentials]") {
    Fixture f;
    f.script.output = R"({"token":"a","expires_at":"2026-11-28T12:00:00Z"})";
    f.wall = system_clock::time_point(
                 std::chrono::sys_days(std::chrono::year(2026) / std::chrono::November / 28)) +
             2h;  // ten hours before
    CHECK(f.get() == R"({"token":"a"})");
    CHECK(f.tokens.states().at("h.example").expires == f.now + 10h);
    f.now += 10h - 5min - 1s;
    CHECK(f.get() == R"({"token":"a"})");
    CHECK(f.script.runs == 1);
    f.now += 1s;
    CHECK(f.get() == R"({"token":"a"})");
    CHECK(f.script.runs == 2);
}

TEST_CASE("a failing command is an error carrying its first line of stderr",
          "[daemon][credentials]") {
    Fixture f;
    f.script.exit_code = 3;
    f.script.error_line = "An error occurred (ExpiredToken)";
    CHECK(f.get() ==
          "error: token_command for h.example (/bin/tok) failed (exit 3): An error occurred "
          "(ExpiredToken)");
    CHECK(f.tokens.states().at("h.example").last_error ==
          "token_command for h.example (/bin/tok) failed (exit 3): An error occurred "
          "(ExpiredToken)");
    f.script.exit_code = 0;
    f.script.output = "two\nlines\n";
    f.now += kFailureBackoff;  // each failure is remembered that long
    CHECK(f.get() ==
          "error: token_command for h.example (/bin/tok) printed more than one line: "
          "print the token alone, or a JSON object");
    f.script.output = R"({"token":"a","expires_at":"2000-01-01T00:00:00Z"})";
    f.wall = system_clock::time_point(
        std::chrono::sys_days(std::chrono::year(2026) / std::chrono::January / 1));
    f.now += kFailureBackoff;
    CHECK(f.get() ==
          "error: token_command for h.example (/bin/tok) printed a token that has already expired");
}

TEST_CASE("a failed refresh: the current token until its expiry, then the error",
          "[daemon][credentials]") {
    Fixture f;
    CHECK(f.get() == R"({"token":"tok-1"})");
    f.script.exit_code = 1;
    f.script.error_line = "down";
    f.now += 95s;
    CHECK(f.get() == R"({"token":"tok-1"})");  // starts a refresh, which fails
    CHECK(f.script.runs == 2);
    CHECK(f.get() == R"({"token":"tok-1"})");  // tried again from half the time left
    CHECK(f.script.runs == 2);
    f.now += 5s;
    CHECK_THAT(f.get(), Catch::Contains("failed (exit 1): down"));
}

TEST_CASE("a failed run with no token answers the gets of the next 5 s without running again",
          "[daemon][credentials]") {
    Fixture f;
    f.script.exit_code = 2;
    f.script.error_line = "no profile";
    const std::string failure =
        "error: token_command for h.example (/bin/tok) failed (exit 2): no profile";
    CHECK(f.get() == failure);
    f.now += 4s;
    CHECK(f.gets(3) == std::vector<std::string>(3, failure));
    CHECK(f.script.runs == 1);
    f.script.exit_code = 0;
    f.now += 1s;  // the back-off is over
    CHECK(f.get() == R"({"token":"tok-1"})");
    CHECK(f.script.runs == 2);
    f.script.exit_code = 2;
    f.now += 100s;  // expired: the run fails, and is remembered again
    CHECK(f.get() == failure);
    CHECK(f.get() == failure);
    CHECK(f.script.runs == 3);
    CHECK(f.tokens.flush("h.example") == 1);  // flush forgets the failure
    f.script.exit_code = 0;
    CHECK(f.get() == R"({"token":"tok-1"})");
    CHECK(f.script.runs == 4);
}

TEST_CASE("commands refused: every get says why, nothing runs", "[daemon][credentials]") {
    Fixture f(one_host("/c/config.toml is group-writable"));
    CHECK(f.get() ==
          "error: token_command for h.example not run: /c/config.toml is group-writable");
    CHECK(f.script.runs == 0);
    CHECK_THAT(f.tokens.states().at("h.example").last_error, Catch::Contains("group-writable"));
    CHECK_FALSE(f.tokens.has("other.example"));
}

TEST_CASE("the runner: output, stderr's first line, exit codes, limits", "[daemon][credentials]") {
    ::unsetenv("INVOCATION_ID");  // never through a user manager here
    const auto sh = [](const std::string& script, std::chrono::seconds timeout = 20s) {
        return run_token_command(TokenCommand{{"/bin/sh", "-c", script}, 600s, timeout, {}, {}});
    };
    const CommandRun ok = sh("read x; echo \"tok-$HOME-${x:-none}\"; echo 'warn 1' >&2");
    CHECK(ok.exit_code == 0);
    CHECK(std::string(ok.output.view()) == "tok-" + std::string(std::getenv("HOME")) + "-none\n");
    CHECK(ok.first_error_line == "warn 1");
    const CommandRun failed = sh("printf '\\nfirst\\nsecond\\n' >&2; exit 4");
    CHECK(failed.exit_code == 4);
    CHECK(failed.first_error_line == "first");
    const CommandRun hung = sh("echo partial; sleep 30 & sleep 30", 1s);
    CHECK(hung.timed_out);
    const CommandRun flood = sh("head -c 70000 /dev/zero");
    CHECK(flood.too_much_output);
    const CommandRun missing =
        run_token_command(TokenCommand{{"/nonexistent/hk-command"}, 600s, 5s, {}, {}});
    CHECK_THAT(missing.launch_error,
               Catch::Contains("not run: cannot run /nonexistent/hk-command: No such file"));
    CHECK_THAT(command_failure("h", TokenCommand{{"x"}, 1s, 1s, {}, {}}, hung),
               Catch::Contains("did not finish within 1s (token_command_timeout)"));
    // Given input, the command reads it on its standard input.
    const CommandRun fed = run_token_command(TokenCommand{
        {"/bin/sh", "-c", "read x; echo \"got-$x\""}, 600s, 20s, "oci.example:5000\n", {}});
    CHECK(std::string(fed.output.view()) == "got-oci.example:5000\n");
}

TEST_CASE("stopping ends the running commands' process groups, and none starts after",
          "[daemon][credentials]") {
    ::unsetenv("INVOCATION_ID");
    const std::string dir = std::string(std::getenv("TMPDIR") ? std::getenv("TMPDIR") : "/tmp");
    const std::string polite = dir + "/hk-stop-polite-" + std::to_string(::getpid());
    const std::string stubborn = dir + "/hk-stop-stubborn-" + std::to_string(::getpid());
    ::unlink(polite.c_str());
    ::unlink(stubborn.c_str());
    RunningCommands running;
    CommandRun first;
    CommandRun second;
    std::thread a([&] {
        first = run_token_command(
            TokenCommand{{"/bin/sh", "-c", "touch " + polite + "; sleep 300"}, 600s, 300s, {}, {}},
            &running);
    });
    std::thread b([&] {
        second = run_token_command(
            TokenCommand{{"/bin/sh", "-c", "trap '' TERM; touch " + stubborn + "; sleep 300"},
                         600s,
                         300s,
                         {},
                         {}},
            &running);
    });
    const auto started = [](const std::string& path) { return ::access(path.c_str(), F_OK) == 0; };
    while (!started(polite) || !started(stubborn)) std::this_thread::sleep_for(10ms);
    running.stop();
    a.join();
    b.join();
    CHECK(first.signal == SIGTERM);
    CHECK(second.signal == SIGKILL);  // SIGTERM ignored: killed after the grace
    const CommandRun late =
        run_token_command(TokenCommand{{"/bin/true"}, 600s, 5s, {}, {}}, &running);
    CHECK(late.launch_error == "not run: hostkeeperd is stopping");
    ::unlink(polite.c_str());
    ::unlink(stubborn.c_str());
}

TEST_CASE("through the user manager: systemd-run around hostkeeperd, which checks the program",
          "[daemon][credentials]") {
    const TokenCommand command{{"aws", "sts"}, 600s, 30s, {}, {}};
    CHECK(launch_argv(command, "/usr/bin/hostkeeperd", "hk-1.service", {"HOME", "PATH"}) ==
          std::vector<std::string>{"systemd-run",
                                   "--user",
                                   "--pipe",
                                   "--wait",
                                   "--collect",
                                   "--quiet",
                                   "--same-dir",
                                   "--unit=hk-1.service",
                                   "-p",
                                   "RuntimeMaxSec=30",
                                   "-p",
                                   "KillMode=control-group",
                                   "-p",
                                   "TimeoutStopSec=2",
                                   "-E",
                                   "HOME",
                                   "-E",
                                   "PATH",
                                   "--",
                                   "/usr/bin/hostkeeperd",
                                   "--exec-token-command",
                                   "aws",
                                   "sts"});
}

TEST_CASE("a timed-out command: its whole process group is gone when the run returns",
          "[daemon][credentials]") {
    ::unsetenv("INVOCATION_ID");
    const std::string marker = "hk-unit-marker-" + std::to_string(::getpid());
    const CommandRun hung =
        run_token_command(TokenCommand{{"/bin/sh", "-c",
                                        "sh -c 'sleep 7401; true' " + marker +
                                            " & sh -c 'sleep 7402; true' " + marker + " & wait"},
                                       600s,
                                       1s,
                                       {},
                                       {}});
    CHECK(hung.timed_out);
    CHECK(hung.left_behind.empty());
    std::size_t left = 0;
    for (const auto& entry : std::filesystem::directory_iterator("/proc")) {
        std::ifstream in(entry.path() / "cmdline");
        const std::string cmdline((std::istreambuf_iterator<char>(in)),
                                  std::istreambuf_iterator<char>());
        if (cmdline.find(marker) != std::string::npos) ++left;
    }
    CHECK(left == 0);
}

}  // namespace test_command_tokens
