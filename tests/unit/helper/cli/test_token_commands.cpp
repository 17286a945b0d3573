// hostkeeper exec and token: their command lines, the child's environment,
// token's refusal to write to a terminal, and the errors against a
// stand-in hostkeeperd (fake_daemon.hpp). No token value is ever printed.
#include <fcntl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <catch2/catch.hpp>
#include <cstdlib>
#include <filesystem>
#include <fstream>

#include "fake_daemon.hpp"
#include "helper/cli/dash_command.hpp"
#include "helper/cli/token_commands.hpp"
#include "helper/client/exit_codes.hpp"
#include "helper/client/run_reporting.hpp"
#include "proto/messages.hpp"

namespace test_token_commands {

namespace cli = hostkeeper::helper::cli;
namespace client = hostkeeper::helper::client;
namespace proto = hostkeeper::proto;
using hk_unit::capture;
using hk_unit::Captured;
using hk_unit::FakeDaemon;
using proto::Json;

namespace {

Json found(const std::string& token) {
    Json reply = proto::make_ok();
    reply["found"] = true;
    reply["credentials"] = Json{{"token", token}};
    return reply;
}

Json not_found() {
    Json reply = proto::make_ok();
    reply["found"] = false;
    return reply;
}

Json listed(std::initializer_list<const char*> hosts) {
    Json reply = proto::make_ok();
    reply["backend"] = "secret-service";
    reply["hosts"] = Json::array();
    for (const char* host : hosts) {
        reply["hosts"].push_back(Json{{"host", host},
                                      {"label", std::string("hostkeeper: ") + host},
                                      {"stored", nullptr},
                                      {"fields", Json::array({"token"})},
                                      {"locked", false}});
    }
    reply["docker"] = Json::array();
    reply["rejected"] = Json::array();
    return reply;
}

struct Parsed {
    int status = -1;
    cli::ExecOptions exec;
    cli::TokenOptions token;
    bool exec_parsed = false, token_parsed = false;
};

Parsed parse(std::vector<std::string> args) {
    Parsed p;
    CLI::App app{"test", "hostkeeper"};
    app.require_subcommand(1);
    auto* exec = cli::add_exec_command(app, p.exec);
    auto* token = cli::add_token_command(app, p.token);
    std::vector<char*> argv{const_cast<char*>("hostkeeper")};
    for (auto& a : args) argv.push_back(a.data());
    try {
        app.parse(static_cast<int>(argv.size()), argv.data());
        p.status = 0;
    } catch (const CLI::ParseError& e) {
        p.status = e.get_exit_code();
    }
    p.exec_parsed = exec->parsed();
    p.token_parsed = token->parsed();
    return p;
}

std::vector<std::string> texts(const cli::ExecEnvironment& environment) {
    std::vector<std::string> out;
    for (const auto& e : environment.entries) out.emplace_back(e.view());
    return out;
}

}  // namespace

TEST_CASE("exec: --host repeats, --tfe, and COMMAND with its own options after --", "[cli][exec]") {
    const Parsed p =
        parse({"exec", "--host", "a.example", "--host", "bücher.example", "--tfe",
               "app.terraform.io", "--", "terraform", "init", "-upgrade", "--host", "x"});
    REQUIRE(p.status == 0);
    CHECK(p.exec_parsed);
    CHECK(p.exec.hosts == std::vector<std::string>{"a.example", "bücher.example"});
    CHECK(p.exec.tfe == "app.terraform.io");
    CHECK(p.exec.command ==
          std::vector<std::string>{"terraform", "init", "-upgrade", "--host", "x"});

    const Parsed all = parse({"exec", "--", "env"});
    REQUIRE(all.status == 0);
    CHECK(all.exec.hosts.empty());
    CHECK(all.exec.tfe.empty());
    CHECK(all.exec.command == std::vector<std::string>{"env"});

    CHECK(parse({"exec"}).status != 0);                         // no COMMAND
    CHECK(parse({"exec", "--host", "a.example"}).status != 0);  // still none
    CHECK(parse({"exec", "--tfe"}).status != 0);
}

TEST_CASE("token: one HOST and --force", "[cli][token]") {
    const Parsed p = parse({"token", "app.terraform.io", "--force"});
    REQUIRE(p.status == 0);
    CHECK(p.token_parsed);
    CHECK(p.token.host == "app.terraform.io");
    CHECK(p.token.force);
    CHECK_FALSE(parse({"token", "app.terraform.io"}).token.force);
    CHECK(parse({"token"}).status != 0);
    CHECK(parse({"token", "a.example", "b.example"}).status != 0);
}

TEST_CASE("exec's environment: ours replace the caller's for the same host, others stay",
          "[cli][exec]") {
    std::vector<cli::HostToken> tokens;
    tokens.push_back({"xn--bcher-kva.example.com", "TF_TOKEN_xn____bcher__kva_example_com",
                      proto::Secret("tok-idn")});
    tokens.push_back({"registry.example.com:8443", "TF_TOKEN_registry_example_com:8443",
                      proto::Secret("tok-port")});
    const std::vector<std::string_view> inherited{
        "PATH=/usr/bin",
        "TF_TOKEN_xn--bcher-kva_example_com=old-idn",  // another spelling, same host
        "TF_TOKEN_other_example=other",                // another host: kept
        "TF_TOKEN_ab____cd_example=ignored",           // Terraform ignores it: kept
        "TFE_TOKEN=old-tfe",                           // kept: no --tfe
        "HOME=/home/u"};
    const cli::ExecEnvironment env = cli::build_exec_environment(inherited, tokens, std::nullopt);
    const auto entries = texts(env);
    CHECK(entries == std::vector<std::string>{"PATH=/usr/bin", "TF_TOKEN_other_example=other",
                                              "TF_TOKEN_ab____cd_example=ignored",
                                              "TFE_TOKEN=old-tfe", "HOME=/home/u",
                                              "TF_TOKEN_xn____bcher__kva_example_com=tok-idn",
                                              "TF_TOKEN_registry_example_com:8443=tok-port"});
    REQUIRE(env.notes.size() == 1);
    CHECK_THAT(env.notes[0], Catch::Contains("TF_TOKEN_xn--bcher-kva_example_com from the "
                                             "environment is replaced by the keyring's token for "
                                             "xn--bcher-kva.example.com"));
    REQUIRE(env.unportable.size() == 1);
    CHECK(env.unportable[0] ==
          "TF_TOKEN_registry_example_com:8443 (for registry.example.com:8443)");
    const std::string dash_note = cli::unportable_note(env.unportable, "sh");
    CHECK_THAT(dash_note, Catch::StartsWith("TF_TOKEN_registry_example_com:8443 (for "
                                            "registry.example.com:8443) is not a shell name: sh is "
                                            "run by dash"));
    for (const auto& note : env.notes) {
        CHECK_THAT(note, !Catch::Contains("tok-") && !Catch::Contains("old-idn"));
    }
    const auto envp = env.envp();
    REQUIRE(envp.size() == entries.size() + 1);
    CHECK(envp.back() == nullptr);
    CHECK(std::string(envp[0]) == "PATH=/usr/bin");
}

TEST_CASE("exec's environment with --tfe: TFE_TOKEN, TFE_HOSTNAME in Unicode, TFE_ADDRESS",
          "[cli][exec]") {
    const std::vector<std::string_view> inherited{"TFE_TOKEN=old", "TFE_HOSTNAME=old.example",
                                                  "LANG=C"};
    const cli::ExecEnvironment env = cli::build_exec_environment(
        inherited, {}, cli::TfeToken{"xn--bcher-kva.example.com:8443", proto::Secret("tfe-tok")});
    CHECK(texts(env) == std::vector<std::string>{
                            "LANG=C", "TFE_TOKEN=tfe-tok", "TFE_HOSTNAME=bücher.example.com:8443",
                            "TFE_ADDRESS=https://xn--bcher-kva.example.com:8443"});
    REQUIRE(env.notes.size() == 2);
    CHECK_THAT(env.notes[0], Catch::StartsWith("TFE_TOKEN from the environment is replaced"));
    CHECK_THAT(env.notes[1], Catch::StartsWith("TFE_HOSTNAME from the environment is replaced"));
}

TEST_CASE("exec: a named host without credentials is an error and nothing runs", "[cli][exec]") {
    const auto options = hk_unit::fake_client_options();
    FakeDaemon daemon(*options.socket, std::vector<Json>{found("tok-a"), not_found()});
    const std::string marker = options.socket->parent_path() / "ran";
    cli::ExecOptions exec{{"a.example", "b.example"}, "", {"touch", marker}};
    const Captured c = capture([&] {
        return client::run_reporting("hostkeeper", [&] { return cli::run_exec(options, exec); });
    });
    CHECK(c.status == client::kExitNotFound);
    CHECK_THAT(c.err, Catch::Contains("no credentials are stored for b.example; nothing was run"));
    CHECK_THAT(c.err, !Catch::Contains("tok-a"));
    CHECK(c.out.empty());
    CHECK_FALSE(std::filesystem::exists(marker));
    const auto& requests = daemon.requests();
    REQUIRE(requests.size() == 2);
    CHECK(requests[0].value("op", "") == "get");
    CHECK(requests[0].value("host", "") == "a.example");
    CHECK(requests[1].value("host", "") == "b.example");
}

TEST_CASE("exec: a named host Terraform cannot read back, or an invalid one, is a usage error",
          "[cli][exec]") {
    const auto options = hk_unit::fake_client_options();
    for (const char* host : {"a.-b", "ab--cd.example", "https://x.example"}) {
        INFO(host);
        cli::ExecOptions exec{{host}, "", {"true"}};
        const Captured c = capture([&] {
            return client::run_reporting("hostkeeper",
                                         [&] { return cli::run_exec(options, exec); });
        });
        CHECK(c.status == client::kExitUsage);
        CHECK_THAT(c.err, Catch::Contains("invalid hostname"));
    }
}

TEST_CASE("exec: an unencodable host among all stored hosts is left out with a warning",
          "[cli][exec]") {
    const auto options = hk_unit::fake_client_options();
    // A daemon listing a name no normalization gives: exec must not trust it.
    FakeDaemon daemon(*options.socket,
                      std::vector<Json>{listed({"a.-b", "ok.example"}), found("tok-ok")});
    cli::ExecOptions exec{{}, "", {"hk-unit-no-such-command-x9"}};
    const Captured c = capture([&] {
        return client::run_reporting("hostkeeper", [&] { return cli::run_exec(options, exec); });
    });
    CHECK(c.status == client::kExitCommandNotFound);
    CHECK_THAT(c.err, Catch::Contains("hostkeeper exec: a.-b cannot be encoded as a TF_TOKEN_* "
                                      "variable"));
    CHECK_THAT(c.err, Catch::Contains("left out"));
    CHECK_THAT(c.err,
               Catch::Contains("hostkeeper exec: hk-unit-no-such-command-x9: command not found"));
    CHECK_THAT(c.err, !Catch::Contains("tok-ok"));
    const auto& requests = daemon.requests();
    REQUIRE(requests.size() == 2);
    CHECK(requests[0].value("op", "") == "list");
    CHECK(requests[1].value("host", "") == "ok.example");
}

TEST_CASE("exec: a locked keyring is an error, never a partial environment", "[cli][exec]") {
    const auto options = hk_unit::fake_client_options();
    FakeDaemon daemon(*options.socket,
                      std::vector<Json>{listed({"a.example", "b.example"}), found("tok-a"),
                                        proto::make_error(proto::ErrorCode::keyring_locked,
                                                          "the keyring is locked")});
    const std::string marker = options.socket->parent_path() / "ran";
    cli::ExecOptions exec{{}, "", {"touch", marker}};
    const Captured c = capture([&] {
        return client::run_reporting("hostkeeper", [&] { return cli::run_exec(options, exec); });
    });
    CHECK(c.status == client::kExitFailed);
    CHECK_THAT(c.err, Catch::Contains("the keyring is locked"));
    CHECK_FALSE(std::filesystem::exists(marker));
}

TEST_CASE("exec: a file that is not executable is 126", "[cli][exec]") {
    const auto options = hk_unit::fake_client_options();
    const auto script = options.socket->parent_path() / "not-executable";
    {
        std::FILE* f = std::fopen(script.c_str(), "w");
        std::fputs("#!/bin/sh\n", f);
        std::fclose(f);
    }
    FakeDaemon daemon(*options.socket, listed({}));
    cli::ExecOptions exec{{}, "", {script.string()}};
    const Captured c = capture([&] {
        return client::run_reporting("hostkeeper", [&] { return cli::run_exec(options, exec); });
    });
    CHECK(c.status == client::kExitCannotExecute);
    CHECK_THAT(c.err, Catch::Contains("Permission denied"));
}

TEST_CASE("exec: COMMAND replaces the process, gets the variables, and its status is exec's",
          "[cli][exec]") {
    const auto options = hk_unit::fake_client_options();
    FakeDaemon daemon(*options.socket, std::vector<Json>{found("tok-a"), found("tok-tfe")});
    // The child checks the values itself: nothing about them is printed.
    cli::ExecOptions exec{
        {"a-b.example"},
        "app.terraform.io",
        {"/bin/sh", "-c",
         "test \"$TF_TOKEN_a__b_example\" = tok-a && test \"$TFE_TOKEN\" = tok-tfe && "
         "test \"$TFE_HOSTNAME\" = app.terraform.io && "
         "test \"$TFE_ADDRESS\" = https://app.terraform.io && exit 42; exit 1"}};
    std::fflush(nullptr);
    const pid_t child = ::fork();
    REQUIRE(child >= 0);
    if (child == 0) {
        ::setenv("TF_TOKEN_a__b_example", "from-the-caller", 1);
        const int devnull = ::open("/dev/null", O_WRONLY);
        ::dup2(devnull, 2);
        ::_exit(cli::run_exec(options, exec) + 100);  // only when exec failed
    }
    int status = 0;
    REQUIRE(::waitpid(child, &status, 0) == child);
    REQUIRE(WIFEXITED(status));
    CHECK(WEXITSTATUS(status) == 42);
    CHECK(daemon.requests().size() == 2);
}

namespace {

// Runs `body` with a pseudo-terminal on stdout; returns its status, what it
// wrote to stderr and what reached the terminal.
template <typename F>
int on_terminal(F body, std::string& err, std::string& shown) {
    const int master = ::posix_openpt(O_RDWR | O_NOCTTY | O_NONBLOCK);
    REQUIRE(master >= 0);
    REQUIRE(::grantpt(master) == 0);
    REQUIRE(::unlockpt(master) == 0);
    const int terminal = ::open(::ptsname(master), O_RDWR | O_NOCTTY);
    REQUIRE(terminal >= 0);
    std::fflush(nullptr);
    const int saved = ::dup(1);
    ::dup2(terminal, 1);
    const Captured c = [&] {
        // capture() would put a file on stdout: only stderr goes to one here.
        std::fflush(stderr);
        const int file = ::memfd_create("err", MFD_CLOEXEC);
        const int saved_err = ::dup(2);
        ::dup2(file, 2);
        Captured r;
        r.status = body();
        std::fflush(nullptr);
        ::dup2(saved_err, 2);
        ::close(saved_err);
        ::lseek(file, 0, SEEK_SET);
        char buffer[4096];
        for (ssize_t n = 0; (n = ::read(file, buffer, sizeof buffer)) > 0;)
            r.err.append(buffer, static_cast<std::size_t>(n));
        ::close(file);
        return r;
    }();
    ::dup2(saved, 1);
    ::close(saved);
    char buffer[4096];
    for (ssize_t n = 0; (n = ::read(master, buffer, sizeof buffer)) > 0;)
        shown.append(buffer, static_cast<std::size_t>(n));
    ::close(terminal);
    ::close(master);
    err = c.err;
    return c.status;
}

}  // namespace

TEST_CASE("token: refused to a terminal without --force, before asking the daemon",
          "[cli][token]") {
    const auto options = hk_unit::fake_client_options();  // nothing listens: asking would be exit 4
    std::string err, shown;
    const int status = on_terminal(
        [&] {
            return client::run_reporting("hostkeeper", [&] {
                return cli::run_token(options, {"app.terraform.io", false});
            });
        },
        err, shown);
    CHECK(status == client::kExitUsage);
    CHECK_THAT(err, Catch::Contains("standard output is a terminal: not printing the token for "
                                    "app.terraform.io there"));
    CHECK_THAT(err, Catch::Contains("--force"));
    CHECK(shown.empty());
}

TEST_CASE("token: --force prints to a terminal", "[cli][token]") {
    const auto options = hk_unit::fake_client_options();
    FakeDaemon daemon(*options.socket, found("tok-forced"));
    std::string err, shown;
    const int status = on_terminal(
        [&] {
            return client::run_reporting("hostkeeper", [&] {
                return cli::run_token(options, {"app.terraform.io", true});
            });
        },
        err, shown);
    CHECK(status == 0);
    CHECK(err.empty());
    CHECK_THAT(shown, Catch::StartsWith("tok-forced"));
}

TEST_CASE("token: printed to a pipe or file; no credentials is exit 3", "[cli][token]") {
    const auto options = hk_unit::fake_client_options();
    {
        FakeDaemon daemon(*options.socket, found("tok-piped"));
        const Captured c = capture([&] {
            return client::run_reporting("hostkeeper", [&] {
                return cli::run_token(options, {"Bücher.Example.com", false});
            });
        });
        CHECK(c.status == 0);
        CHECK(c.out == "tok-piped\n");
        CHECK(daemon.request().value("host", "") == "xn--bcher-kva.example.com");
    }
    std::filesystem::remove(*options.socket);
    {
        FakeDaemon daemon(*options.socket, not_found());
        const Captured c = capture([&] {
            return client::run_reporting("hostkeeper", [&] {
                return cli::run_token(options, {"xn--bcher-kva.example.com", false});
            });
        });
        CHECK(c.status == client::kExitNotFound);
        CHECK(c.out.empty());
        CHECK_THAT(c.err, Catch::Contains("no credentials are stored for bücher.example.com "
                                          "(xn--bcher-kva.example.com)"));
    }
}

TEST_CASE("exec warns about names dash drops only for a command dash runs", "[cli][exec]") {
    char pattern[] = "/tmp/hk-dash.XXXXXX";
    const std::filesystem::path dir = ::mkdtemp(pattern);
    const auto script = [&](const std::string& name, const std::string& first_line) {
        const std::filesystem::path file = dir / name;
        std::ofstream(file) << first_line << "\nexit 0\n";
        std::filesystem::permissions(file, std::filesystem::perms::owner_all);
        return file.string();
    };
    // Debian's /bin/sh is dash; the checks below say so only where it is.
    const bool sh_is_dash = std::filesystem::canonical("/bin/sh").filename() == "dash";
    CHECK(cli::runs_under_dash("/bin/sh") == sh_is_dash);
    CHECK(cli::runs_under_dash("sh") == sh_is_dash);
    CHECK(cli::runs_under_dash(script("posix", "#!/bin/sh")) == sh_is_dash);
    CHECK(cli::runs_under_dash(script("env-sh", "#!/usr/bin/env sh")) == sh_is_dash);
    CHECK_FALSE(cli::runs_under_dash("/bin/bash"));
    CHECK_FALSE(cli::runs_under_dash(script("bash", "#!/bin/bash")));
    CHECK_FALSE(cli::runs_under_dash(script("env-bash", "#!/usr/bin/env bash")));
    CHECK_FALSE(cli::runs_under_dash(script("none", "echo no interpreter line")));
    CHECK_FALSE(cli::runs_under_dash("hk-no-such-command-anywhere"));
    std::filesystem::remove_all(dir);
}

}  // namespace test_token_commands
