// The helper run exactly as Terraform and OpenTofu run it
// (docs/specs/credentials-helper-protocol.md): absolute argv[0], the
// configured args first, verb and hostname last, stdin /dev/null for get.
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <catch2/catch.hpp>
#include <cstring>
#include <thread>

#include "harness.hpp"

namespace test_conformance {

using namespace hostkeeper::it;
namespace fs = std::filesystem;

namespace {
Result as_terraform(const std::string& program, const std::vector<std::string>& args,
                    const std::optional<std::string>& input = std::nullopt) {
    std::vector<std::string> argv{program};
    argv.insert(argv.end(), args.begin(), args.end());
    RunOptions options;
    options.input = input;  // nullopt: /dev/null, as for get
    return run(argv, options);
}
}  // namespace

TEST_CASE("get/store/forget with configured args before the verb", "[conformance]") {
    const fs::path socket = fresh_socket();
    const std::string helper_path = bin("terraform-credentials-hostkeeper");
    const std::vector<std::string> args{"--timeout=15", "--socket=" + socket.string()};
    auto with = [&](std::vector<std::string> tail) {
        std::vector<std::string> all = args;
        all.insert(all.end(), tail.begin(), tail.end());
        return all;
    };
    for (const std::string host :
         {"app.terraform.io", "xn--bcher-kva.example.com", "tfe.corp.example:8443"}) {
        CAPTURE(host);
        const Result none = as_terraform(helper_path, with({"get", host}));
        CHECK(none.exit_code == 0);
        CHECK(none.out == "{}\n");
        CHECK(none.err.empty());
        // Terraform sends compact JSON without a trailing newline.
        const Result stored =
            as_terraform(helper_path, with({"store", host}), R"({"token":"tf-)" + host + R"("})");
        CHECK(stored.exit_code == 0);
        CHECK(stored.out.empty());
        CHECK(stored.err.empty());
        const Result got = as_terraform(helper_path, with({"get", host}));
        CHECK(got.exit_code == 0);
        CHECK(got.out == R"({"token":"tf-)" + host + "\"}\n");
        const Result forgot = as_terraform(helper_path, with({"forget", host}));
        CHECK(forgot.exit_code == 0);
        CHECK(forgot.out.empty());
    }
}

TEST_CASE("usage errors: unknown verb, missing host, bad host, extra args", "[conformance]") {
    const fs::path socket = fresh_socket();
    const std::string helper_path = bin("terraform-credentials-hostkeeper");
    const std::string s = "--socket=" + socket.string();
    const auto [args, message] = GENERATE_COPY(table<std::vector<std::string>, std::string>({
        {{s, "list", "app.terraform.io"}, "list not in"},
        {{s, "get"}, "host is required"},
        {{s}, "verb is required"},
        {{s, "get", "ex_ample.com"}, "usage: terraform-credentials-hostkeeper"},
        {{s, "get", "https://app.terraform.io"}, "without a scheme"},
        {{s, "get", "a..b"}, "empty label"},
        {{s, "get", "app.terraform.io:70000"}, "port"},
        {{s, "get", "a.example", "b.example"}, "not expected"},
        {{s, "--no-such-flag", "get", "a.example"}, "not expected"},
        {{"--timeout=soon", "get", "a.example"}, "timeout"},
    }));
    CAPTURE(args);
    const Result r = as_terraform(helper_path, args);
    CHECK(r.exit_code == 2);
    CHECK(r.out.empty());
    CHECK_THAT(r.err, Catch::Contains(message));
}

TEST_CASE("linked into ~/.terraform.d/plugins, the helper finds hostkeeperd beside its real path",
          "[conformance]") {
    const fs::path socket = fresh_socket();
    const fs::path plugins = test_root() / "home" / ".terraform.d" / "plugins";
    fs::create_directories(plugins);
    const fs::path link = plugins / "terraform-credentials-hostkeeper";
    fs::remove(link);
    fs::create_symlink(bin("terraform-credentials-hostkeeper"), link);
    RunOptions options;
    options.env["PATH"] = "/usr/bin:/bin";  // not via PATH
    const Result got =
        run({link.string(), "--socket=" + socket.string(), "get", "app.terraform.io"}, options);
    CHECK(got.exit_code == 0);
    CHECK(got.out == "{}\n");
    CHECK(daemons_matching(socket.string()).size() == 1);
}

TEST_CASE("the helper never hangs: a daemon that does not answer hits --timeout", "[conformance]") {
    // Something that accepts connections but never answers.
    const fs::path socket = fresh_socket();
    const int fd = ::socket(AF_UNIX, SOCK_STREAM, 0);
    sockaddr_un address{};
    address.sun_family = AF_UNIX;
    std::strncpy(address.sun_path, socket.c_str(), sizeof address.sun_path - 1);
    REQUIRE(::bind(fd, reinterpret_cast<const sockaddr*>(&address), sizeof address) == 0);
    REQUIRE(::listen(fd, 8) == 0);
    const auto started = std::chrono::steady_clock::now();
    const Result r = run({bin("terraform-credentials-hostkeeper"), "--socket=" + socket.string(),
                          "--timeout=1", "get", "app.terraform.io"});
    const auto took = std::chrono::steady_clock::now() - started;
    ::close(fd);
    CHECK(r.exit_code == 5);
    CHECK(r.out.empty());
    CHECK_THAT(r.err, Catch::Contains("gave up after 1 s waiting for hostkeeperd"));
    CHECK(took < std::chrono::seconds(10));  // bounded, not a performance figure
}

TEST_CASE("--help and --version", "[conformance]") {
    const Result help = run({bin("terraform-credentials-hostkeeper"), "--help"});
    CHECK(help.exit_code == 0);
    CHECK_THAT(help.out, Catch::Contains("get, store or forget") && Catch::Contains("Exit codes"));
    const Result version = run({bin("terraform-credentials-hostkeeper"), "--version"});
    CHECK(version.exit_code == 0);
    CHECK_THAT(version.out, Catch::Contains("0.1.0"));
    const Result daemon_help = run({bin("hostkeeperd"), "--help"});
    CHECK(daemon_help.exit_code == 0);
    CHECK_THAT(daemon_help.out,
               Catch::Contains("--credentials-ttl") && Catch::Contains("config.toml"));
}

TEST_CASE("the helper loads libidn2 only for a hostname that needs IDNA", "[conformance]") {
    // Terraform passes hostnames already in canonical ASCII: loading libidn2
    // and libunistring for them was a third of the helper's start-up.
    const fs::path socket = fresh_socket();
    const std::string helper_path = bin("terraform-credentials-hostkeeper");
    // The daemon is started first, without LD_DEBUG (it links libcurl, which
    // links libidn2, and would write to the same stderr).
    REQUIRE(as_terraform(helper_path, {"--socket=" + socket.string(), "get", "app.terraform.io"})
                .exit_code == 0);
    const auto libraries_loaded = [&](const std::string& host) {
        RunOptions options;
        options.env["LD_DEBUG"] =
            "files";  // the dynamic loader names every library it loads, on stderr
        const Result r = run({helper_path, "--socket=" + socket.string(), "get", host}, options);
        INFO(host << ": exit " << r.exit_code << "\n" << r.err);
        CHECK(r.exit_code == 0);
        CHECK(r.out == "{}\n");
        CHECK_THAT(r.err, Catch::Contains("libc.so.6"));  // LD_DEBUG took effect
        return r.err;
    };
    CHECK_THAT(libraries_loaded("app.terraform.io"), !Catch::Contains("libidn2"));
    CHECK_THAT(libraries_loaded("Bücher.example.com"), Catch::Contains("libidn2"));
}

}  // namespace test_conformance
