// The keyring lives its own life under a running hostkeeperd: restarted,
// locked, edited by hand, stopped, killed. The daemon's cache follows it, a
// locked keyring serves no token, nothing stored is lost, the daemon keeps
// its pid, and its memory stays bounded.
#include <signal.h>

#include <catch2/catch.hpp>
#include <chrono>
#include <nlohmann/json.hpp>
#include <thread>

#include "harness.hpp"
#include "helper/client/daemon_client.hpp"
#include "https_world.hpp"
#include "keyring_control.hpp"

namespace test_keyring_lifecycle {

using namespace hostkeeper::it;
namespace fs = std::filesystem;
using Json = nlohmann::json;
using steady = std::chrono::steady_clock;

namespace {

Json daemon_status(const fs::path& socket) {
    const Result r = run({bin("hostkeeper"), "--socket", socket.string(), "status", "--json"});
    REQUIRE(r.exit_code == 0);
    return Json::parse(r.out);
}

long long invalidations(const fs::path& socket) {
    const long long seen = keyring_invalidations(socket);
    REQUIRE(seen >= 0);
    return seen;
}

std::string creds(const std::string& token) {
    return R"({"token":")" + token + R"("})";
}

// Tokens never leave their owner: not in the daemon's log.
void check_log_clean(const Daemon& daemon, const std::vector<std::string>& tokens) {
    const std::string log = daemon.log();
    for (const auto& token : tokens) CHECK(log.find(token) == std::string::npos);
}

}  // namespace

TEST_CASE("after a keyring restart the next uncached get succeeds on the first try",
          "[keyring-lifecycle]") {
    const fs::path socket = fresh_socket();
    Daemon daemon(socket);
    const pid_t pid = daemon.pid();
    REQUIRE(
        helper(socket, {"store", "before.example.com"}, creds("tok-before-restart")).exit_code ==
        0);
    // Stored behind the daemon's back: never cached, so the next get must ask the keyring.
    REQUIRE(secret_tool_store("uncached.example.com", creds("tok-uncached")).exit_code == 0);

    kill_keyring(SIGTERM);
    start_keyring();

    const Result first = helper(socket, {"get", "uncached.example.com"});
    CHECK(first.exit_code == 0);
    CHECK(first.err.empty());
    CHECK(first.out == creds("tok-uncached") + "\n");
    // Nothing stored was lost, and each host gets its own token.
    CHECK(helper(socket, {"get", "before.example.com"}).out == creds("tok-before-restart") + "\n");
    CHECK(daemon.pid() == pid);
    CHECK(process_alive(pid));
    check_log_clean(daemon, {"tok-before-restart", "tok-uncached"});
}

TEST_CASE("a locked keyring serves no token, cached or not; unlocked, it serves again",
          "[keyring-lifecycle]") {
    const fs::path socket = fresh_socket();
    Daemon daemon(socket);
    REQUIRE(helper(socket, {"store", "locked.example.com"}, creds("tok-locked")).exit_code == 0);
    REQUIRE(helper(socket, {"get", "locked.example.com"}).out == creds("tok-locked") + "\n");
    REQUIRE(helper(socket, {"get", "locked.example.com"}).exit_code == 0);  // a cache hit
    CHECK(daemon_status(socket).at("credentials").value("keyring_watched", false));

    const long long before = invalidations(socket);
    REQUIRE(lock_login_collection().exit_code == 0);
    await_invalidation(socket, before);

    const Result refused = helper(socket, {"get", "locked.example.com"});
    CHECK(refused.exit_code == 1);
    CHECK(refused.out.empty());
    CHECK_THAT(refused.err, Catch::Contains("locked"));
    CHECK(daemon_status(socket).at("credentials").value("positive", -1) == 0);
    // "None" stays "none" while locked (attributes are searchable).
    CHECK(helper(socket, {"get", "nothing.example.com"}).out == "{}\n");

    // (gnome-keyring 42 sends no signal for an unlock through its control
    // socket; none is needed: the lock emptied the cache.)
    REQUIRE(unlock_login_collection());
    const Result served = helper(socket, {"get", "locked.example.com"});
    CHECK(served.exit_code == 0);
    CHECK(served.out == creds("tok-locked") + "\n");
    check_log_clean(daemon, {"tok-locked"});
}

TEST_CASE(
    "a locked keyring: discovery goes without the token; a 401 or 404 names the keyring, not kept",
    "[keyring-lifecycle]") {
    for (const unsigned status : {401U, 404U}) {
        INFO("HTTP " << status);
        World world;
        const std::string token = "tok-discovery-locked";
        world.server.route("registry.localhost", kDoc, [&](const hostkeeper::test::Request& r) {
            if (r.authorization == "Bearer " + token)
                return hostkeeper::test::json_response(R"({"modules.v1":"/m/"})");
            return hostkeeper::test::json_response(R"({"errors":["not for you"]})", status);
        });
        world.start({{"error_ttl", quoted("1s")}});
        const std::string host = world.host();
        store_token(world, host, token);

        const long long before = invalidations(world.socket());
        REQUIRE(lock_login_collection().exit_code == 0);
        struct Unlock {
            ~Unlock() { (void)unlock_login_collection(); }  // the next tests need it unlocked
        } unlock;
        await_invalidation(world.socket(), before);

        const Json refused = world.ask_discover(host);
        INFO(refused.dump());
        CHECK(refused.at("ok") == false);
        CHECK(refused.value("/error/code"_json_pointer, "") == "discovery_failed");
        const std::string message = refused.value("/error/message"_json_pointer, "");
        CHECK_THAT(message, Catch::Contains("HTTP status " + std::to_string(status) +
                                            " to a request without credentials"));
        CHECK_THAT(message, Catch::Contains("could not be read from the keyring"));
        CHECK(world.server.requests().back().authorization == std::nullopt);

        // Not kept as "no services": unlocked, the host answers as soon as the
        // failure's error_ttl is over.
        REQUIRE(unlock_login_collection());
        std::this_thread::sleep_for(std::chrono::milliseconds(1100));
        const Json served = world.ask_discover(host);
        INFO(served.dump());
        CHECK(served.at("ok") == true);
        CHECK(served.value("source", "") == "network");
        CHECK(served.value("/services/modules.v1"_json_pointer, "") ==
              world.url("registry", "/m/"));
    }
}

TEST_CASE("an item added, changed or removed with secret-tool is what the next get returns",
          "[keyring-lifecycle]") {
    const fs::path socket = fresh_socket();
    Daemon daemon(socket);
    REQUIRE(helper(socket, {"store", "edited.example.com"}, creds("tok-v1")).exit_code == 0);
    REQUIRE(helper(socket, {"get", "edited.example.com"}).out == creds("tok-v1") + "\n");

    long long before = invalidations(socket);
    REQUIRE(secret_tool_store("edited.example.com", creds("tok-v2")).exit_code == 0);
    await_invalidation(socket, before);
    CHECK(helper(socket, {"get", "edited.example.com"}).out ==
          creds("tok-v2") + "\n");  // no stale token

    before = invalidations(socket);
    REQUIRE(secret_tool_clear("edited.example.com").exit_code == 0);
    await_invalidation(socket, before);
    CHECK(helper(socket, {"get", "edited.example.com"}).out == "{}\n");

    // Cached as "none", then created by hand: no stale "none".
    REQUIRE(helper(socket, {"get", "added.example.com"}).out == "{}\n");
    before = invalidations(socket);
    REQUIRE(secret_tool_store("added.example.com", creds("tok-added")).exit_code == 0);
    await_invalidation(socket, before);
    CHECK(helper(socket, {"get", "added.example.com"}).out == creds("tok-added") + "\n");
    check_log_clean(daemon, {"tok-v1", "tok-v2", "tok-added"});
}

TEST_CASE("a stopped keyring: a bounded failure, the daemon lives on, and after SIGCONT it works",
          "[keyring-lifecycle]") {
    const fs::path socket = fresh_socket();
    Daemon daemon(socket, {"--unlock-timeout", "2s"});
    const pid_t pid = daemon.pid();
    REQUIRE(helper(socket, {"store", "cached.example.com"}, creds("tok-cached")).exit_code == 0);
    REQUIRE(secret_tool_store("stalled.example.com", creds("tok-stalled")).exit_code == 0);
    // Cached once the stores' own ItemCreated signals have gone by.
    REQUIRE(wait_until(
        [&] {
            (void)helper(socket, {"get", "cached.example.com"});
            std::this_thread::sleep_for(std::chrono::milliseconds(100));
            return daemon_status(socket).at("credentials").value("positive", 0) == 1;
        },
        std::chrono::seconds(5)));

    const pid_t keyring = keyring_pid();
    REQUIRE(::kill(keyring, SIGSTOP) == 0);
    const auto started = steady::now();
    Spawned stalled = spawn({bin("terraform-credentials-hostkeeper"), "--socket=" + socket.string(),
                             "--timeout=30", "get", "stalled.example.com"});
    // Meanwhile the event loop answers: status, and tokens it holds.
    const auto status_started = steady::now();
    CHECK(daemon_status(socket).at("daemon").value("pid", 0) == pid);
    CHECK(helper(socket, {"get", "cached.example.com"}).out == creds("tok-cached") + "\n");
    CHECK(steady::now() - status_started < std::chrono::seconds(2));

    const Result failed = stalled.wait();
    const auto waited = steady::now() - started;
    ::kill(keyring, SIGCONT);
    CHECK(failed.exit_code == 1);
    CHECK(failed.out.empty());
    CHECK_THAT(failed.err, Catch::Contains("did not answer within 2 s"));
    CHECK(waited < std::chrono::seconds(8));
    CHECK(process_alive(pid));

    const Result after = helper(socket, {"get", "stalled.example.com"});
    CHECK(after.exit_code == 0);
    CHECK(after.out == creds("tok-stalled") + "\n");
    check_log_clean(daemon, {"tok-cached", "tok-stalled"});
}

TEST_CASE("a killed keyring is a clear error; restarted, everything stored is there",
          "[keyring-lifecycle]") {
    const fs::path socket = fresh_socket();
    Daemon daemon(socket);
    const pid_t pid = daemon.pid();
    REQUIRE(helper(socket, {"store", "k1.example.com"}, creds("tok-k1")).exit_code == 0);
    REQUIRE(helper(socket, {"store", "k2.example.com"}, creds("tok-k2")).exit_code == 0);
    REQUIRE(helper(socket, {"get", "k1.example.com"}).exit_code == 0);

    const long long before = invalidations(socket);
    kill_keyring(SIGKILL);
    // No keyring: no token, even one the daemon had cached, and a message that says why.
    await_invalidation(socket, before);
    const Result gone = helper(socket, {"get", "k1.example.com"});
    CHECK(gone.exit_code == 1);
    CHECK(gone.out.empty());
    CHECK_THAT(gone.err, Catch::Contains("no Secret Service on the session bus"));

    start_keyring();
    CHECK(helper(socket, {"get", "k1.example.com"}).out == creds("tok-k1") + "\n");
    CHECK(helper(socket, {"get", "k2.example.com"}).out == creds("tok-k2") + "\n");
    CHECK(process_alive(pid));
    check_log_clean(daemon, {"tok-k1", "tok-k2"});
}

TEST_CASE("memory stays bounded through a thousand keyring events", "[keyring-lifecycle]") {
    const fs::path socket = fresh_socket();
    Daemon daemon(socket);
    hostkeeper::helper::client::ClientOptions options;
    options.socket = socket;
    options.start_daemon = false;
    // Each store is an ItemCreated signal from the keyring, each get a keyring lookup after it.
    const auto round = [&](int i) {
        hostkeeper::helper::client::DaemonClient client(options);
        const std::string host = "m" + std::to_string(i % 10) + ".example.com";
        auto store = hostkeeper::proto::make_request(hostkeeper::proto::Op::store);
        store["host"] = host;
        store["credentials"] = {{"token", "tok-m" + std::to_string(i % 10)}};
        (void)client.call(store);
        hostkeeper::helper::client::DaemonClient reader(options);
        auto get = hostkeeper::proto::make_request(hostkeeper::proto::Op::get);
        get["host"] = host;
        const Json answer = reader.call(get);
        CHECK(answer.at("credentials").at("token") == "tok-m" + std::to_string(i % 10));
    };
    for (int i = 0; i < 200; ++i) round(i);
    const long long events_before = invalidations(socket);
    const long rss_before = resident_kib(daemon.pid());
    for (int i = 0; i < 1000; ++i) round(i);
    await_invalidation(socket, events_before + 1);
    const long rss_after = resident_kib(daemon.pid());
    const long long events_after = invalidations(socket);
    WARN("VmRSS " << rss_before << " KiB -> " << rss_after << " KiB; invalidations "
                  << events_before << " -> " << events_after);
    CHECK(events_after - events_before >=
          100);  // the events were seen (coalesced bursts count once)
    CHECK(rss_before > 0);
    if (address_sanitized(daemon.pid())) {
        WARN("RSS growth not checked under AddressSanitizer");
    } else {
        CHECK(rss_after - rss_before < 2048);
    }
    CHECK(process_alive(daemon.pid()));
}

TEST_CASE("a keyring loaded locked from disk is reported locked, never 'no credentials'",
          "[keyring-lifecycle]") {
    const fs::path socket = fresh_socket();
    Daemon daemon(socket);
    const auto hk = [&](const std::vector<std::string>& args) {
        std::vector<std::string> argv{bin("hostkeeper"), "--socket", socket.string()};
        argv.insert(argv.end(), args.begin(), args.end());
        return run(argv);
    };
    REQUIRE(helper(socket, {"store", "disk.example.com"}, creds("tok-disk")).exit_code == 0);
    // Another application's item with a "host" attribute: never served, never deleted.
    RunOptions foreign;
    foreign.input = "not-hostkeepers";
    REQUIRE(run({"/usr/bin/secret-tool", "store", "--label=another app", "xdg:schema",
                 "org.example.OtherApp", "host", "foreign.example.com"},
                foreign)
                .exit_code == 0);

    // gnome-keyring started again without the password: the login keyring
    // is read from disk and stays locked; no prompter can run on this bus.
    kill_keyring(SIGTERM);
    start_keyring_locked();
    struct Unlock {
        ~Unlock() { (void)unlock_login_collection(); }  // the next tests need it unlocked
    } unlock;

    const Result got = helper(socket, {"get", "disk.example.com"});
    CHECK(got.exit_code == 1);
    CHECK(got.out.empty());
    CHECK_THAT(got.err, Catch::Contains("locked"));

    const Result token = hk({"token", "disk.example.com"});
    CHECK(token.exit_code == 1);
    CHECK_THAT(token.err, Catch::Contains("locked"));
    CHECK_THAT(token.out + token.err, !Catch::Contains("no credentials are stored"));

    const Result list = hk({"list"});
    INFO("list: " << list.out << list.err);
    CHECK(list.exit_code != 0);
    CHECK_THAT(list.out + list.err, !Catch::Contains("no credentials stored"));
    CHECK_THAT(list.out + list.err, Catch::Contains("locked"));

    const Result doctor = hk({"doctor"});
    INFO("doctor: " << doctor.out << doctor.err);
    CHECK_THAT(doctor.out + doctor.err, !Catch::Contains("no token to check"));
    CHECK_THAT(doctor.out + doctor.err, Catch::Contains("locked"));
    CHECK_THAT(doctor.out + doctor.err, !Catch::Contains("(unlocked)"));

    const Result status = hk({"status"});
    INFO("status: " << status.out << status.err);
    CHECK_THAT(status.out + status.err, !Catch::Contains("unlocked"));

    // Forgetting cannot pass for "there was nothing" either.
    const Result forgot = helper(socket, {"forget", "disk.example.com"});
    CHECK(forgot.exit_code == 1);
    CHECK_THAT(forgot.err, Catch::Contains("locked"));

    // Unlocked (as PAM does at login), the token is served; the other
    // application's item is still not ours.
    REQUIRE(unlock_login_collection());
    const Result served = helper(socket, {"get", "disk.example.com"});
    CHECK(served.exit_code == 0);
    CHECK(served.out == creds("tok-disk") + "\n");
    CHECK(helper(socket, {"get", "foreign.example.com"}).out == "{}\n");
    CHECK(helper(socket, {"forget", "foreign.example.com"}).exit_code != 1);
    const Result still = run({"/usr/bin/secret-tool", "lookup", "xdg:schema",
                              "org.example.OtherApp", "host", "foreign.example.com"});
    CHECK(still.out == "not-hostkeepers");
    check_log_clean(daemon, {"tok-disk"});
}

}  // namespace test_keyring_lifecycle
