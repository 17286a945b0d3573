// hostkeeper setup --registry-cache and its --undo, doctor and status for the
// registry cache. [setup] and [doctor]: the command line's files and checks.
// [registry-cache]: what needs hostkeeperd's registry_cache_sync and
// status.registry_cache. Both run with a real hostkeeper-portd on the
// registry port of a private network namespace (support/port-env.sh).
#include <stdlib.h>

#include <algorithm>
#include <catch2/catch.hpp>

#include "proto/json.hpp"
#include "user_home.hpp"

namespace test_registry_cache_setup {

using namespace hostkeeper::it;
using hostkeeper::proto::Json;
namespace fs = std::filesystem;

namespace {

const std::string kHeader =
    "# Written by hostkeeperd for the registry cache (hostkeeper setup --registry-cache).\n"
    "# Do not edit: hostkeeperd rewrites this file. Turn the cache off with: hostkeeper setup "
    "--registry-cache --undo\n";

std::vector<std::string> tree(const fs::path& dir) {
    std::vector<std::string> paths;
    for (const auto& entry : fs::recursive_directory_iterator(dir))
        paths.push_back(entry.path().string());
    std::sort(paths.begin(), paths.end());
    return paths;
}

fs::path cache_json(const UserHome& u) {
    return u.config / "hostkeeper" / "registry-cache.json";
}

Json read_json(const fs::path& path) {
    return hostkeeper::proto::parse_json(read_file(path));
}

// A tfrc file as hostkeeperd writes it, pointing at `port`.
std::string tfrc_for(int port, const std::string& host) {
    const std::string base = "http://127.0.0.1:" + std::to_string(port) + "/v1/" + host;
    return kHeader + "host \"" + host + "\" {\n  services = {\n    \"modules.v1\" = \"" + base +
           "/modules/\"\n    \"providers.v1\" = \"" + base + "/providers/\"\n  }\n}\n";
}

// The registry port of support/port-env.sh's hostkeeper-portd.
int registry_port() {
    const char* port = std::getenv("HK_REGISTRY_PORT");
    if (port == nullptr || std::getenv("HOSTKEEPER_PORT_SOCKET") == nullptr)
        throw std::runtime_error("run the registry cache tests through tests/support/port-env.sh");
    return std::stoi(port);
}

std::string registry_listen() {
    return "127.0.0.1:" + std::to_string(registry_port());
}

// A stand-in systemctl that logs its arguments and succeeds, and the file
// that makes hostkeeper believe a user manager runs.
fs::path fake_user_manager(UserHome& u) {
    fs::path log = u.root / "systemctl.log";
    u.write(u.bin_dir / "systemctl", "#!/bin/sh\necho \"$*\" >> '" + log.string() + "'\nexit 0\n",
            0755);
    const fs::path runtime = u.root / "runtime";
    u.write(runtime / "systemd" / "private", "");
    fs::permissions(runtime, static_cast<fs::perms>(0700), fs::perm_options::replace);
    u.options.env["XDG_RUNTIME_DIR"] = runtime.string();
    return log;
}

}  // namespace

TEST_CASE(
    "setup --registry-cache writes registry-cache.json 0600: no secret, the tfrc file, the named "
    "hosts normalized, and no port of its own",
    "[setup]") {
    UserHome u;
    const Result r = u.hostkeeper({"setup", "--terraform", "--registry-cache",
                                   "Bücher.Example.INVALID:443", "tfe.corp.invalid:8443"});
    INFO(r.out << r.err);
    REQUIRE(fs::exists(cache_json(u)));
    CHECK(mode_of(cache_json(u)) == 0600);
    const Json config = read_json(cache_json(u));
    CHECK(config.at("version") == 1);
    CHECK_FALSE(config.contains("listen"));  // the registry port is the system's
    // The listener's URLs carry no secret: there is none to keep.
    CHECK_FALSE(config.contains("capability"));
    CHECK(config.size() == 3);  // version, tfrc_files, hosts
    CHECK(config.at("tfrc_files") ==
          Json::array({(u.home / ".terraform.d" / "hostkeeper.tfrc").string()}));
    CHECK(config.at("hosts") ==
          Json::array({"xn--bcher-kva.example.invalid", "tfe.corp.invalid:8443"}));
    CHECK_THAT(r.out, Catch::Contains("registry cache: wrote " + cache_json(u).string()));
}

TEST_CASE("setup --registry-cache again keeps the file and adds the hosts", "[setup]") {
    UserHome u;
    u.hostkeeper({"setup", "--terraform", "--registry-cache", "a.invalid"});
    REQUIRE(fs::exists(cache_json(u)));
    const Json first = read_json(cache_json(u));
    const Result again =
        u.hostkeeper({"setup", "--terraform", "--registry-cache", "B.invalid", "a.invalid"});
    INFO(again.out << again.err);
    const Json second = read_json(cache_json(u));
    CHECK(second.at("hosts") == Json::array({"a.invalid", "b.invalid"}));
    CHECK(second.at("tfrc_files") == first.at("tfrc_files"));
    CHECK(mode_of(cache_json(u)) == 0600);
}

TEST_CASE("setup --registry-cache over an older file with a capability accepts it and drops it",
          "[setup]") {
    UserHome u;
    const std::string old_capability = "AbCdEfGhIjKlMnOpQrStUvWxYz0123456789-_AbCdE";
    const std::string tfrc = (u.home / ".terraform.d" / "hostkeeper.tfrc").string();
    u.write(cache_json(u),
            R"({"version":1,"listen":"127.0.0.1:47123","capability":")" + old_capability +
                R"(","tfrc_files":[")" + tfrc + R"("],"hosts":["a.invalid"]})",
            0600);
    const Result again = u.hostkeeper({"setup", "--terraform", "--registry-cache", "a.invalid"});
    INFO(again.out << again.err);
    CHECK_THAT(again.out + again.err, !Catch::Contains("move it away"));
    CHECK_THAT(again.out, Catch::Contains("the old URL capability dropped"));
    const Json config = read_json(cache_json(u));
    CHECK_FALSE(config.contains("capability"));
    CHECK(config.at("hosts") == Json::array({"a.invalid"}));
    CHECK(config.at("tfrc_files") == Json::array({tfrc}));
    CHECK_THAT(read_file(cache_json(u)), !Catch::Contains(old_capability));
}

TEST_CASE("setup --registry-cache refuses a bad HOST before changing anything", "[setup]") {
    UserHome u;
    const auto before = tree(u.root);
    const Result r =
        u.hostkeeper({"setup", "--terraform", "--registry-cache", "good.invalid", "bad host!"});
    CHECK(r.exit_code == 1);
    CHECK_THAT(r.err, Catch::Contains("\"bad host!\" is not a registry hostname"));
    CHECK_THAT(r.err, Catch::Contains("nothing was changed"));
    CHECK(tree(u.root) == before);

    u.hostkeeper({"setup", "--terraform", "--registry-cache", "good.invalid"});
    REQUIRE(fs::exists(cache_json(u)));
    const std::string written = read_file(cache_json(u));
    CHECK(u.hostkeeper({"setup", "--registry-cache", "also.invalid", "x..invalid"}).exit_code == 1);
    CHECK(read_file(cache_json(u)) == written);

    const Result without = u.hostkeeper({"setup", "some.invalid"});
    CHECK(without.exit_code == 2);
    CHECK_THAT(without.err, Catch::Contains("HOST arguments go with --registry-cache"));
    CHECK(u.hostkeeper({"setup", "--registry-cache", "--undo", "good.invalid"}).exit_code == 2);
    CHECK(read_file(cache_json(u)) == written);
}

TEST_CASE("setup --registry-cache --dry-run changes nothing", "[setup]") {
    UserHome u;
    const auto before = tree(u.root);
    const Result r =
        u.hostkeeper({"setup", "--terraform", "--registry-cache", "--dry-run", "h.invalid"});
    INFO(r.out << r.err);
    CHECK(r.exit_code == 0);
    CHECK_THAT(r.out, Catch::Contains("registry cache: would write " + cache_json(u).string()));
    CHECK_THAT(r.out, Catch::Contains("would ask hostkeeperd to discover h.invalid"));
    CHECK_THAT(r.out, Catch::Contains("dry run: nothing was changed"));
    CHECK(tree(u.root) == before);
}

TEST_CASE(
    "setup --registry-cache --undo removes the file and hostkeeperd's tfrc files, and only "
    "those; --undo then takes back the rest",
    "[setup]") {
    UserHome u;
    u.hostkeeper({"setup", "--terraform", "--registry-cache", "h.invalid"});
    REQUIRE(fs::exists(cache_json(u)));
    const fs::path tfrc = u.home / ".terraform.d" / "hostkeeper.tfrc";
    u.write(tfrc, tfrc_for(registry_port(), "h.invalid"));

    const Result undo = u.hostkeeper({"setup", "--registry-cache", "--undo"});
    INFO(undo.out << undo.err);
    CHECK(undo.exit_code == 0);
    CHECK_FALSE(fs::exists(cache_json(u)));
    CHECK_FALSE(fs::exists(tfrc));
    CHECK_THAT(undo.out, Catch::Contains("removed " + tfrc.string()));
    // The credentials_helper setup stays: only the registry cache was undone.
    CHECK_THAT(read_file(u.home / ".terraformrc"), Catch::Contains("credentials_helper"));
    CHECK(u.hostkeeper({"setup", "--registry-cache", "--undo"}).out.find("nothing to undo") !=
          std::string::npos);
    CHECK(u.hostkeeper({"setup", "--undo"}).exit_code == 0);
    CHECK_FALSE(fs::exists(u.home / ".terraformrc"));
}

TEST_CASE("setup --undo leaves a tfrc file the user edited, and reverses a rerun's hosts only",
          "[setup]") {
    UserHome u;
    u.hostkeeper({"setup", "--terraform", "--registry-cache", "first.invalid"});
    REQUIRE(fs::exists(cache_json(u)));
    const Json first = read_json(cache_json(u));
    u.hostkeeper({"setup", "--terraform", "--registry-cache", "second.invalid"});
    const fs::path tfrc = u.home / ".terraform.d" / "hostkeeper.tfrc";
    const std::string edited = "host \"first.invalid\" {\n  services = {}\n}\n";
    u.write(tfrc, edited);

    // Newest record first: the rerun's host goes, the file and its port stay.
    const Result dry = u.hostkeeper({"setup", "--registry-cache", "--undo", "--dry-run"});
    CHECK_THAT(dry.out, Catch::Contains("would remove"));
    CHECK(read_json(cache_json(u)).at("hosts").size() == 2);

    const Result undo = u.hostkeeper({"setup", "--undo"});
    INFO(undo.out << undo.err);
    CHECK(undo.exit_code == 0);
    CHECK_THAT(undo.out, Catch::Contains("(hosts second.invalid)"));
    CHECK_THAT(undo.out, Catch::Contains("left " + tfrc.string() + " alone"));
    CHECK(read_file(tfrc) == edited);
    CHECK_FALSE(fs::exists(cache_json(u)));
    (void)first;
}

TEST_CASE(
    "setup --registry-cache with a user manager removes an older setup's socket drop-in, writes "
    "the service drop-in and restarts the units; --undo removes it and restarts them again",
    "[setup]") {
    UserHome u;
    const fs::path log = fake_user_manager(u);
    u.options.env["XDG_CACHE_HOME"] = (u.root / "cache").string();
    // An older setup made hostkeeperd.socket hold a TCP port of the user's own.
    const fs::path drop_in =
        u.config / "systemd" / "user" / "hostkeeperd.socket.d" / "registry-cache.conf";
    u.write(drop_in, "[Socket]\nListenStream=127.0.0.1:47123\nNoDelay=true\n");
    const Result r = u.hostkeeper({"setup", "--terraform", "--registry-cache"});
    INFO(r.out << r.err);
    REQUIRE(fs::exists(cache_json(u)));
    CHECK_FALSE(fs::exists(drop_in));
    CHECK_THAT(r.out, Catch::Contains("systemd: removed " + drop_in.string()));
    // The service's sandbox (ProtectHome=read-only) lets it write where the cache needs.
    const fs::path service_drop_in =
        u.config / "systemd" / "user" / "hostkeeperd.service.d" / "registry-cache.conf";
    REQUIRE(fs::exists(service_drop_in));
    // Made again before each start (outside the sandbox), then writable in it.
    const std::string tfd = (u.home / ".terraform.d").string();
    const std::string cache = (u.root / "cache" / "hostkeeper").string();
    const std::string state = (u.state / "hostkeeper").string();
    CHECK_THAT(read_file(service_drop_in),
               Catch::Contains("[Service]\nExecStartPre=+/bin/mkdir -p -m 0700 -- \"" + tfd +
                               "\" \"" + cache + "\" \"" + state + "\"\nReadWritePaths=\"-" + tfd +
                               "\" \"-" + cache + "\" \"-" + state + "\"\n"));
    CHECK(fs::is_directory(u.home / ".terraform.d"));
    CHECK(fs::is_directory(u.root / "cache" / "hostkeeper"));
    CHECK(fs::is_directory(u.state / "hostkeeper"));
    const std::string calls = read_file(log);
    const auto reload = calls.find("--user daemon-reload");
    const auto start = calls.find("--user start hostkeeperd.socket", reload);
    CHECK(reload != std::string::npos);
    CHECK(start != std::string::npos);
    CHECK_THAT(calls, Catch::Contains("--user stop hostkeeperd.service hostkeeperd.socket"));

    fs::remove(log);
    const Result undo = u.hostkeeper({"setup", "--registry-cache", "--undo"});
    INFO(undo.out << undo.err);
    CHECK(undo.exit_code == 0);
    CHECK_FALSE(fs::exists(drop_in));
    CHECK_FALSE(fs::exists(service_drop_in));
    CHECK_FALSE(fs::exists(cache_json(u)));
    CHECK_THAT(read_file(log), Catch::Contains("--user daemon-reload"));
    CHECK_THAT(read_file(log), Catch::Contains("--user start hostkeeperd.socket"));
}

TEST_CASE("setup --registry-cache says the cache cannot apply while TF_CLI_CONFIG_FILE is set",
          "[setup]") {
    UserHome u;
    const fs::path custom = u.root / "ci" / "terraform.rc";
    fs::create_directories(custom.parent_path());
    u.options.env["TF_CLI_CONFIG_FILE"] = custom.string();
    const Result r = u.hostkeeper({"setup", "--terraform", "--registry-cache", "--dry-run"});
    INFO(r.out << r.err);
    CHECK(r.exit_code == 0);
    CHECK_THAT(r.out, Catch::Contains("TF_CLI_CONFIG_FILE is set, so Terraform reads only " +
                                      custom.string()));
    CHECK_THAT(r.out, Catch::Contains("the registry cache does not apply to it"));
    CHECK_THAT(r.out, Catch::Contains("no include directive"));
    CHECK_THAT(r.out, Catch::Contains("unset TF_CLI_CONFIG_FILE, or copy the host blocks from " +
                                      (u.home / ".terraform.d" / "hostkeeper.tfrc").string()));
}

TEST_CASE(
    "doctor: the registry cache is off, and a leftover tfrc points at a port root does not hold",
    "[doctor]") {
    UserHome u;
    REQUIRE(u.hostkeeper({"setup", "--terraform"}).exit_code == 0);
    const Result off = u.hostkeeper({"doctor"});
    INFO(off.out << off.err);
    CHECK(off.exit_code == 0);
    CHECK_THAT(off.out, Catch::Contains("ok    registry cache: off (no " + cache_json(u).string()));

    const fs::path tfrc = u.home / ".terraform.d" / "hostkeeper.tfrc";
    u.write(tfrc, tfrc_for(1, "registry.invalid"));
    const Result stale = u.hostkeeper({"doctor"});
    INFO(stale.out << stale.err);
    CHECK(stale.exit_code == 1);
    CHECK_THAT(stale.out, Catch::Contains("FAIL  registry cache: " + tfrc.string() +
                                          " points Terraform and OpenTofu at 127.0.0.1:1, which "
                                          "is not a registry port root holds"));
    CHECK_THAT(stale.out, Catch::Contains("fix: hostkeeper setup --registry-cache --undo"));
}

// ---- These need hostkeeperd's registry_cache_sync and status.registry_cache. ----

TEST_CASE("setup --registry-cache without a registry port writes nothing and says why", "[setup]") {
    UserHome u;
    u.options.env["HOSTKEEPER_PORT_SOCKET"] = (u.root / "no-such" / "port.sock").string();
    const auto before = tree(u.root);
    const Result r = u.hostkeeper({"setup", "--terraform", "--registry-cache", "a.invalid"});
    INFO(r.out << r.err);
    CHECK(r.exit_code == 1);
    CHECK_THAT(r.err, Catch::Contains("registry cache: no registry port here: "));
    CHECK_THAT(r.err, Catch::Contains("does not exist"));
    CHECK_THAT(r.err, Catch::Contains("another local user could answer Terraform's registry"));
    CHECK(tree(u.root) == before);

    // A regular file, or a socket another user made, is not the registry port's.
    std::string pattern = "/tmp/hk-fake-port.XXXXXX";
    REQUIRE(::mkdtemp(pattern.data()) != nullptr);
    const fs::path fake = pattern;
    struct Remove {
        fs::path dir;
        ~Remove() { fs::remove_all(dir); }
    } remove_fake{fake};
    u.options.env["HOSTKEEPER_PORT_SOCKET"] = (fake / "port.sock").string();
    u.write(fake / "port.sock", "");
    const Result not_socket = u.hostkeeper({"setup", "--terraform", "--registry-cache"});
    CHECK(not_socket.exit_code == 1);
    CHECK_THAT(not_socket.err, Catch::Contains("is not a socket"));
    fs::remove(fake / "port.sock");
    fs::permissions(fake, static_cast<fs::perms>(0777), fs::perm_options::replace);
    const Result made = run(
        {"/usr/bin/setpriv", "--reuid=65534", "--regid=65534", "--clear-groups", "/usr/bin/python3",
         "-c", "import socket, sys\ns = socket.socket(socket.AF_UNIX)\ns.bind(sys.argv[1])\n",
         (fake / "port.sock").string()});
    REQUIRE(made.exit_code == 0);
    const Result foreign = u.hostkeeper({"setup", "--terraform", "--registry-cache"});
    CHECK(foreign.exit_code == 1);
    CHECK_THAT(foreign.err, Catch::Contains("is not root's"));
    CHECK_FALSE(fs::exists(cache_json(u)));
}

TEST_CASE(
    "setup --registry-cache: hostkeeperd registers for the registry port and says per host "
    "why not routed",
    "[registry-cache]") {
    UserHome u;
    const Result r = u.hostkeeper({"setup", "--terraform", "--registry-cache", "nowhere.invalid"});
    INFO(r.out << r.err);
    CHECK(r.exit_code == 0);
    const std::string listen = registry_listen();
    CHECK_THAT(r.out, Catch::Contains("registry cache: hostkeeperd is registered with "
                                      "hostkeeper-portd for the registry port " +
                                      listen));
    CHECK_THAT(r.out, Catch::Contains("registry cache: nowhere.invalid: not routed: "));

    const Result status = u.hostkeeper({"status"});
    INFO(status.out << status.err);
    CHECK_THAT(status.out, Catch::Contains("registry cache listener: " + listen + " held"));
    CHECK_THAT(status.out, Catch::Contains("0 of 1 hosts routed"));
}

TEST_CASE(
    "doctor: the registry cache on through the registry port, and a tfrc pointing at "
    "another port",
    "[registry-cache]") {
    UserHome u;
    REQUIRE(u.hostkeeper({"setup", "--terraform", "--registry-cache"}).exit_code == 0);
    const std::string listen = registry_listen();
    const Result healthy = u.hostkeeper({"doctor"});
    INFO(healthy.out << healthy.err);
    CHECK_THAT(healthy.out, Catch::Contains("ok    registry cache: on (" + cache_json(u).string()));
    CHECK_THAT(healthy.out, Catch::Contains("ok    registry cache: mode: host blocks through the "
                                            "registry port " +
                                            listen + ", held for every user by root"));
    CHECK_THAT(healthy.out, Catch::Contains("ok    registry cache: hostkeeperd is registered with "
                                            "hostkeeper-portd for " +
                                            listen));

    const fs::path tfrc = u.home / ".terraform.d" / "hostkeeper.tfrc";
    const int other = 47123;
    u.write(tfrc, tfrc_for(other, "registry.invalid"));
    const Result stale = u.hostkeeper({"doctor"});
    INFO(stale.out << stale.err);
    CHECK(stale.exit_code == 1);
    CHECK_THAT(stale.out, Catch::Contains("points Terraform and OpenTofu at 127.0.0.1:" +
                                          std::to_string(other) +
                                          ", which is not a registry port root holds"));

    // Without a registry port, doctor says the mode is off and why.
    u.options.env["HOSTKEEPER_PORT_SOCKET"] = (u.root / "none" / "port.sock").string();
    const Result off = u.hostkeeper({"doctor"});
    INFO(off.out << off.err);
    CHECK(off.exit_code == 1);
    CHECK_THAT(off.out, Catch::Contains("FAIL  registry cache: mode: off, no registry port can be "
                                        "trusted here: "));
}

}  // namespace test_registry_cache_setup
