// hostkeeper setup --registry-cache and its --undo, doctor and status for the
// registry cache. [setup] and [doctor]: the command line's files and checks.
// [registry-cache]: what needs hostkeeperd's registry_cache_sync and
// status.registry_cache (the daemon side of issue 12).
#include <algorithm>
#include <catch2/catch.hpp>
#include <regex>

#include "proto/json.hpp"
#include "user_home.hpp"

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
    const std::string base = "http://127.0.0.1:" + std::to_string(port) + "/CAP/v1/" + host;
    return kHeader + "host \"" + host + "\" {\n  services = {\n    \"modules.v1\" = \"" + base +
           "/modules/\"\n    \"providers.v1\" = \"" + base + "/providers/\"\n  }\n}\n";
}

int port_of(const Json& config) {
    const std::string listen = config.at("listen").get<std::string>();
    REQUIRE(listen.rfind("127.0.0.1:", 0) == 0);
    return std::stoi(listen.substr(10));
}

// A stand-in systemctl that logs its arguments and succeeds, and the file
// that makes hostkeeper believe a user manager runs.
fs::path fake_user_manager(UserHome& u) {
    const fs::path log = u.root / "systemctl.log";
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
    "setup --registry-cache writes registry-cache.json 0600: a loopback port, a 256-bit "
    "capability, the tfrc file, the named hosts normalized",
    "[setup]") {
    UserHome u;
    const Result r = u.hostkeeper({"setup", "--terraform", "--registry-cache",
                                   "Bücher.Example.INVALID:443", "tfe.corp.invalid:8443"});
    INFO(r.out << r.err);
    REQUIRE(fs::exists(cache_json(u)));
    CHECK(mode_of(cache_json(u)) == 0600);
    const Json config = read_json(cache_json(u));
    CHECK(config.at("version") == 1);
    const int port = port_of(config);
    CHECK(port >= 1);
    CHECK(port <= 65535);
    const std::string capability = config.at("capability").get<std::string>();
    CHECK(capability.size() == 43);  // 32 bytes, base64url without padding
    CHECK(std::regex_match(capability, std::regex("[A-Za-z0-9_-]{43}")));
    CHECK(config.at("tfrc_files") ==
          Json::array({(u.home / ".terraform.d" / "hostkeeper.tfrc").string()}));
    CHECK(config.at("hosts") ==
          Json::array({"xn--bcher-kva.example.invalid", "tfe.corp.invalid:8443"}));
    CHECK_THAT(r.out, Catch::Contains("registry cache: wrote " + cache_json(u).string()));
    // The capability never lands in setup's record.
    CHECK_THAT(read_file(u.state / "hostkeeper" / "setup.json"), !Catch::Contains(capability));

    UserHome other;
    other.hostkeeper({"setup", "--terraform", "--registry-cache"});
    REQUIRE(fs::exists(cache_json(other)));
    CHECK(read_json(cache_json(other)).at("capability") != capability);
}

TEST_CASE("setup --registry-cache again keeps the port and the capability and adds the hosts",
          "[setup]") {
    UserHome u;
    u.hostkeeper({"setup", "--terraform", "--registry-cache", "a.invalid"});
    REQUIRE(fs::exists(cache_json(u)));
    const Json first = read_json(cache_json(u));
    const Result again =
        u.hostkeeper({"setup", "--terraform", "--registry-cache", "B.invalid", "a.invalid"});
    INFO(again.out << again.err);
    const Json second = read_json(cache_json(u));
    CHECK(second.at("listen") == first.at("listen"));
    CHECK(second.at("capability") == first.at("capability"));
    CHECK(second.at("hosts") == Json::array({"a.invalid", "b.invalid"}));
    CHECK(second.at("tfrc_files") == first.at("tfrc_files"));
    CHECK(mode_of(cache_json(u)) == 0600);
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
    u.write(tfrc, tfrc_for(port_of(read_json(cache_json(u))), "h.invalid"));

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
    "setup --registry-cache with a user manager writes the socket drop-in and restarts the "
    "units; --undo removes it and restarts them again",
    "[setup]") {
    UserHome u;
    const fs::path log = fake_user_manager(u);
    const fs::path drop_in =
        u.config / "systemd" / "user" / "hostkeeperd.socket.d" / "registry-cache.conf";
    const Result r = u.hostkeeper({"setup", "--terraform", "--registry-cache"});
    INFO(r.out << r.err);
    REQUIRE(fs::exists(cache_json(u)));
    const std::string listen = read_json(cache_json(u)).at("listen").get<std::string>();
    REQUIRE(fs::exists(drop_in));
    const std::string text = read_file(drop_in);
    CHECK_THAT(text, Catch::Contains("[Socket]\nListenStream=" + listen + "\nNoDelay=true\n"));
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

TEST_CASE("doctor: the registry cache is off, and a leftover tfrc points at a port nobody holds",
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
                                          "no hostkeeperd holds"));
    CHECK_THAT(stale.out, Catch::Contains("fix: hostkeeper setup --registry-cache --undo"));
}

// ---- These need hostkeeperd's registry_cache_sync and status.registry_cache. ----

TEST_CASE("setup --registry-cache: hostkeeperd holds the port and says per host why not routed",
          "[registry-cache]") {
    UserHome u;
    const Result r = u.hostkeeper({"setup", "--terraform", "--registry-cache", "nowhere.invalid"});
    INFO(r.out << r.err);
    CHECK(r.exit_code == 0);
    const std::string listen = read_json(cache_json(u)).at("listen").get<std::string>();
    CHECK_THAT(r.out, Catch::Contains("registry cache: hostkeeperd holds " + listen));
    CHECK_THAT(r.out, Catch::Contains("registry cache: nowhere.invalid: not routed: "));

    const Result status = u.hostkeeper({"status"});
    INFO(status.out << status.err);
    CHECK_THAT(status.out, Catch::Contains("registry cache listener: " + listen + " held"));
    CHECK_THAT(status.out, Catch::Contains("0 of 1 hosts routed"));
}

TEST_CASE("doctor: the registry cache on, held, and a tfrc pointing at another port",
          "[registry-cache]") {
    UserHome u;
    REQUIRE(u.hostkeeper({"setup", "--terraform", "--registry-cache"}).exit_code == 0);
    const Json config = read_json(cache_json(u));
    const std::string listen = config.at("listen").get<std::string>();
    const Result healthy = u.hostkeeper({"doctor"});
    INFO(healthy.out << healthy.err);
    CHECK_THAT(healthy.out,
               Catch::Contains("ok    registry cache: on, listening address " + listen));
    CHECK_THAT(healthy.out, Catch::Contains("ok    registry cache: hostkeeperd holds " + listen));

    const fs::path tfrc = u.home / ".terraform.d" / "hostkeeper.tfrc";
    const int other = port_of(config) == 1 ? 2 : 1;
    u.write(tfrc, tfrc_for(other, "registry.invalid"));
    const Result stale = u.hostkeeper({"doctor"});
    INFO(stale.out << stale.err);
    CHECK(stale.exit_code == 1);
    CHECK_THAT(stale.out, Catch::Contains("points Terraform and OpenTofu at 127.0.0.1:" +
                                          std::to_string(other) + ", which no hostkeeperd holds"));
}
