// hostkeeper doctor: all "ok" in a healthy home, and in each broken state a
// FAIL line with its fix and exit status 1.
#include <signal.h>

#include <catch2/catch.hpp>
#include <sstream>

#include "keyring_control.hpp"
#include "raw_client.hpp"
#include "user_home.hpp"

namespace test_doctor {

using namespace hostkeeper::it;
namespace fs = std::filesystem;

namespace {

std::vector<std::string> lines_of(const std::string& text) {
    std::vector<std::string> lines;
    std::istringstream in(text);
    for (std::string line; std::getline(in, line);) lines.push_back(line);
    return lines;
}

Result set_up_and_check(UserHome& u) {
    const Result setup = u.hostkeeper({"setup", "--terraform"});
    REQUIRE(setup.exit_code == 0);
    return u.hostkeeper({"doctor"});
}

}  // namespace

TEST_CASE("doctor: a healthy home passes every check", "[doctor]") {
    UserHome u;
    const Result r = set_up_and_check(u);
    INFO(r.out << r.err);
    CHECK(r.exit_code == 0);
    const auto lines = lines_of(r.out);
    REQUIRE(lines.size() >= 9);
    for (std::size_t i = 0; i + 1 < lines.size(); ++i) {
        // "      tried ...": what the automatic keyring choice probed; git
        // is not set up in this home (setup --git is a choice of its own).
        CHECK((lines[i].rfind("ok    ", 0) == 0 ||
               lines[i].rfind("skip  OpenTofu: not found", 0) == 0 ||
               lines[i].rfind("skip  git: does not ask hostkeeper", 0) == 0 ||
               lines[i].rfind("skip  podman: does not ask hostkeeper", 0) == 0 ||
               lines[i].rfind("      tried ", 0) == 0));
    }
    CHECK(lines.back() == "all checks passed");
    CHECK_THAT(r.out, Catch::Contains("Terraform finds the helper at " +
                                      helper_link(u.home / ".terraform.d" / "plugins").string()));
    CHECK_THAT(r.out, Catch::Contains("credentials_helper \"hostkeeper\" at " +
                                      (u.home / ".terraformrc").string()));
    CHECK_THAT(r.out, Catch::Contains("same version"));
    CHECK_THAT(r.out, Catch::Contains("the default collection is there and unlocked"));
    // The probe item is gone again.
    CHECK(u.helper({"get", "hostkeeper-doctor.invalid"}).out == "{}\n");
}

TEST_CASE("doctor: Terraform is there but nothing is set up", "[doctor]") {
    UserHome u;
    fs::create_directories(u.home / ".terraform.d");
    const Result r = u.hostkeeper({"doctor"});
    CHECK(r.exit_code == 1);
    CHECK_THAT(r.out,
               Catch::Contains("FAIL  Terraform looks for terraform-credentials-hostkeeper in"));
    CHECK_THAT(
        r.out,
        Catch::Contains(
            "has no credentials_helper \"hostkeeper\" block; fix: hostkeeper setup --terraform"));
    CHECK_THAT(r.out, Catch::Contains("check(s) failed"));
}

TEST_CASE("doctor: another credentials_helper in a *.tfrc file conflicts", "[doctor]") {
    UserHome u;
    REQUIRE(u.hostkeeper({"setup", "--terraform"}).exit_code == 0);
    const fs::path extra = u.home / ".terraform.d" / "extra.tfrc";
    u.write(extra, "credentials_helper \"other\" {}\n");
    const Result r = u.hostkeeper({"doctor"});
    CHECK(r.exit_code == 1);
    CHECK_THAT(r.out,
               Catch::Contains("FAIL  " + extra.string() + ":1: credentials_helper \"other\""));
    CHECK_THAT(r.out, Catch::Contains("fix: remove that block"));
}

TEST_CASE("doctor: a locked keyring is told once, with its fix", "[doctor]") {
    UserHome u;
    REQUIRE(u.hostkeeper({"setup", "--terraform"}).exit_code == 0);
    REQUIRE(u.helper({"store", "locked.example"}, R"({"token":"tok-locked"})").exit_code == 0);
    REQUIRE(lock_login_collection_seen_by(u.socket).exit_code == 0);
    const Result r = u.hostkeeper({"doctor"});
    unlock_login_collection();
    INFO(r.out << r.err);
    CHECK(r.exit_code == 1);
    std::size_t told = 0;
    for (const auto& line : lines_of(r.out)) {
        // The daemon's long message: why, and how to unlock.
        if (line.find("and was not unlocked") != std::string::npos) ++told;
    }
    CHECK(told == 1);
    CHECK_THAT(r.out, Catch::Contains("skip  token for locked.example not checked: the keyring is "
                                      "locked (above)"));
}

TEST_CASE("doctor: credentials.tfrc.json, credentials blocks and TF_TOKEN_* shadow the keyring",
          "[doctor]") {
    UserHome u;
    REQUIRE(u.hostkeeper({"setup", "--terraform"}).exit_code == 0);
    const fs::path json = u.home / ".terraform.d" / "credentials.tfrc.json";
    u.write(json, R"({"credentials":{"app.terraform.io":{"token":"tok-json"}}})");
    const fs::path rc = u.home / ".terraformrc";
    u.write(rc,
            read_file(rc) + "credentials \"blocked.example.com\" {\n  token = \"tok-block\"\n}\n");
    u.options.env["TF_TOKEN_app_terraform_io"] = "tok-env";
    const Result r = u.hostkeeper({"doctor"});
    CHECK(r.exit_code == 1);
    CHECK_THAT(r.out,
               Catch::Contains("FAIL  " + json.string() + " holds tokens for app.terraform.io"));
    CHECK_THAT(r.out, Catch::Contains("fix: hostkeeper import"));
    CHECK_THAT(r.out, Catch::Contains("FAIL  " + rc.string() +
                                      ":3: credentials \"blocked.example.com\" block"));
    CHECK_THAT(r.out, Catch::Contains("FAIL  TF_TOKEN_app_terraform_io is set"));
    CHECK_THAT(r.out, Catch::Contains("fix: unset TF_TOKEN_app_terraform_io"));
    for (const char* token : {"tok-json", "tok-block", "tok-env"})
        CHECK_THAT(r.out, !Catch::Contains(token));
}

TEST_CASE("doctor: a broken helper link, and one to another program", "[doctor]") {
    UserHome u;
    REQUIRE(u.hostkeeper({"setup", "--terraform"}).exit_code == 0);
    const fs::path link = helper_link(u.home / ".terraform.d" / "plugins");
    fs::remove(link);
    fs::create_symlink("/usr/local/bin/no-such-helper", link);
    const Result r = u.hostkeeper({"doctor"});
    CHECK(r.exit_code == 1);
    CHECK_THAT(r.out, Catch::Contains("FAIL  " + link.string() + " is a broken symlink"));
    CHECK_THAT(r.out, Catch::Contains("fix: hostkeeper setup --terraform"));

    // A link to some other program (say, a stale copy of an older helper).
    u.put_on_path("stale-helper");
    fs::remove(link);
    fs::create_symlink(u.bin_dir / "stale-helper", link);
    const Result stale = u.hostkeeper({"doctor"});
    CHECK(stale.exit_code == 1);
    CHECK_THAT(stale.out,
               Catch::Contains("FAIL  Terraform runs " + (u.bin_dir / "stale-helper").string()));
    CHECK_THAT(stale.out, Catch::Contains("not the installed helper"));
}

TEST_CASE("doctor: an unsafe socket directory", "[doctor]") {
    UserHome u;
    REQUIRE(u.hostkeeper({"setup", "--terraform"}).exit_code == 0);
    const fs::path dir = u.use_unsafe_socket_directory();
    const Result r = u.hostkeeper({"doctor"});
    CHECK(r.exit_code == 1);
    CHECK_THAT(r.out, Catch::Contains("fix: chmod 700 " + dir.string()));
    CHECK_THAT(r.out, Catch::Contains("FAIL  hostkeeperd does not answer"));
}

TEST_CASE("doctor: a daemon of another version", "[doctor]") {
    UserHome u;
    REQUIRE(u.hostkeeper({"setup", "--terraform"}).exit_code == 0);
    // A stand-in daemon that answers hello as an older hostkeeperd would.
    const fs::path script = u.root / "old_daemon.py";
    u.write(script, R"(import json, os, socket, struct, sys
s = socket.socket(socket.AF_UNIX)
s.bind(sys.argv[1])
s.listen(8)
while True:
    c, _ = s.accept()
    while True:
        head = c.recv(4, socket.MSG_WAITALL)
        if len(head) < 4:
            break
        request = json.loads(c.recv(struct.unpack(">I", head)[0], socket.MSG_WAITALL))
        if request.get("op") == "hello":
            answer = {"v": 1, "ok": True, "daemon_version": "0.0.1", "supported": [1]}
        else:
            answer = {"v": 1, "ok": False, "error": {"code": "keyring_unavailable", "message": "stand-in"}}
        body = json.dumps(answer).encode()
        c.sendall(struct.pack(">I", len(body)) + body)
    c.close()
)");
    Spawned old = spawn({"/usr/bin/python3", script.string(), u.socket.string()});
    REQUIRE(wait_until([&] { return listening(u.socket); }, std::chrono::seconds(10)));
    const Result r = u.hostkeeper({"doctor"});
    ::kill(old.pid, SIGTERM);
    old.wait();
    fs::remove(u.socket);
    CHECK(r.exit_code == 1);
    CHECK_THAT(r.out, Catch::Contains("FAIL  hostkeeperd is version 0.0.1, the helper "));
    CHECK_THAT(r.out, Catch::Contains("fix: hostkeeper stop"));
}

TEST_CASE("doctor: a typo in config.toml, while a daemon started before it still runs",
          "[doctor]") {
    UserHome u;
    REQUIRE(u.hostkeeper({"setup", "--terraform"}).exit_code == 0);
    REQUIRE(u.hostkeeper({"start"}).exit_code == 0);
    const fs::path file = u.config / "hostkeeper" / "config.toml";
    fs::create_directories(file.parent_path());
    u.write(file, "idle_timout = \"10m\"\n");
    const Result r = u.hostkeeper({"doctor"});
    INFO(r.out << r.err);
    CHECK(r.exit_code == 1);
    CHECK_THAT(r.out, Catch::Contains("FAIL  hostkeeperd cannot run: " + file.string() +
                                      ":1: unknown key \"idle_timout\""));
    CHECK_THAT(r.out, Catch::Contains("fix: fix the file (see hostkeeper.toml(5))"));
    CHECK_THAT(r.out, Catch::Contains("ok    hostkeeperd "));  // the running one still answers
    fs::remove(file);
    const Result healthy = u.hostkeeper({"doctor"});
    CHECK_THAT(healthy.out, Catch::Contains("ok    hostkeeperd: the configuration is valid"));
    u.hostkeeper({"stop"});
}

TEST_CASE("doctor: no Secret Service on the bus", "[no-secret-service]") {
    UserHome u;
    REQUIRE(u.hostkeeper({"setup", "--terraform"}).exit_code == 0);
    const Result r = u.hostkeeper({"doctor"});
    CHECK(r.exit_code == 1);
    // Nor is a pass store set up: no backend, and how to set up either.
    CHECK_THAT(r.out, Catch::Contains("FAIL  keyring backend: none (configured: auto): "));
    CHECK_THAT(r.out, Catch::Contains("fix: set up either: pass (gpg --quick-gen-key"));
    CHECK_THAT(r.out, Catch::Contains("      tried secret-service: not usable: "));
    // gnome-keyring is installed here (the suite needs it): the fix says to
    // start it, not to install it.
    CHECK_THAT(r.out, Catch::Contains("gnome-keyring-daemon --start --components=secrets"));
    CHECK_THAT(r.out, !Catch::Contains("install gnome-keyring"));
}

TEST_CASE("doctor: a typo the socket's daemon answers with is one failure, with one fix",
          "[doctor]") {
    UserHome u;
    REQUIRE(u.hostkeeper({"setup", "--terraform"}).exit_code == 0);
    const fs::path file = u.config / "hostkeeper" / "config.toml";
    fs::create_directories(file.parent_path());
    u.write(file, "idle_timout = \"10m\"\n");
    // As hostkeeperd.socket starts it: a daemon that answers every request with the error.
    fs::create_directories(u.socket.parent_path());
    fs::permissions(u.socket.parent_path(), fs::perms::owner_all, fs::perm_options::replace);
    Spawned activator = spawn({"/usr/bin/systemd-socket-activate", "-l", u.socket.string(), "-E",
                               "HOME", "-E", "XDG_CONFIG_HOME", "-E", "XDG_RUNTIME_DIR", "-E",
                               "DBUS_SESSION_BUS_ADDRESS", bin("hostkeeperd")},
                              u.options);
    REQUIRE(wait_until([&] { return listening(u.socket); }, std::chrono::seconds(10)));
    const Result r = u.hostkeeper({"doctor"});
    INFO(r.out << r.err);
    CHECK(r.exit_code == 1);
    CHECK_THAT(r.out, Catch::Contains("FAIL  hostkeeperd cannot run: " + file.string() +
                                      ":1: unknown key \"idle_timout\""));
    CHECK_THAT(r.out, Catch::Contains("skip  hostkeeperd answers every request with the "
                                      "configuration error above"));
    CHECK_THAT(r.out, !Catch::Contains("does not answer"));
    std::size_t failures = 0;
    for (const auto& line : lines_of(r.out)) failures += line.rfind("FAIL", 0) == 0 ? 1U : 0U;
    CHECK(failures == 1);  // one typo, one fix
    ::kill(activator.pid, SIGTERM);
    activator.wait();
}

TEST_CASE("doctor: a ca_file the packaged unit could not see is named", "[doctor]") {
    UserHome u;
    REQUIRE(u.hostkeeper({"setup", "--terraform"}).exit_code == 0);
    // This world's files are under /tmp, which hostkeeperd.service does not share.
    REQUIRE(u.root.string().rfind("/tmp/", 0) == 0);
    const fs::path ca = u.root / "corp-ca.pem";
    u.write(ca, "-----BEGIN CERTIFICATE-----\nMIIB\n-----END CERTIFICATE-----\n");
    const fs::path file = u.config / "hostkeeper" / "config.toml";
    fs::create_directories(file.parent_path());
    u.write(file, "[discovery]\nca_file = \"" + ca.string() + "\"\n");
    const Result r = u.hostkeeper({"doctor"});
    INFO(r.out << r.err);
    CHECK_THAT(r.out,
               Catch::Contains("warn  " + file.string() + ": discovery.ca_file " + ca.string() +
                               ": readable here, but hostkeeperd.service "
                               "has a private /tmp"));
    u.write(file, "[discovery]\nca_file = \"" + (u.root / "missing.pem").string() + "\"\n");
    const Result missing = u.hostkeeper({"doctor"});
    INFO(missing.out);
    CHECK(missing.exit_code == 1);
    CHECK_THAT(missing.out, Catch::Contains("FAIL  hostkeeperd cannot run: ") &&
                                Catch::Contains("missing.pem: cannot be read (No such file"));
    u.hostkeeper({"stop"});
}

}  // namespace test_doctor
