// Expiry warnings on the daemon's timer, through the real daemon, a real
// gnome-keyring and a real notification server (dunst under Xvfb) on the
// test's private session bus: a host nobody asks for is warned of soon
// after the daemon starts, in the journal and with one desktop
// notification, and a later read does not warn again; `notify = false`
// leaves the journal only. And the expiry a TFE-like host's token list
// gives (fake_tfe.hpp), learned by `check` and `doctor` for a stored token
// without expires_at: the only token, or the one whose id hostkeeper
// stored; several others: unknown, with the reason.
#include <catch2/catch.hpp>
#include <chrono>
#include <ctime>
#include <fstream>
#include <iterator>
#include <string>

#include "fake_tfe.hpp"
#include "https_world.hpp"
#include "keyring_control.hpp"
#include "notification_server.hpp"

namespace test_expiry_warnings {

using namespace hostkeeper::it;

namespace {

// Waits (up to 10 s) for the daemon's expiry warning of `host`.
bool warned_of(const World& world, const std::string& host) {
    return wait_until(
        [&] { return world.daemon_log().find("the stored token of " + host) != std::string::npos; },
        std::chrono::seconds(10));
}

}  // namespace

TEST_CASE("the daemon warns of a stored expiry on its own, once, with a desktop notification",
          "[expiry-watch]") {
    const NotificationServer notifications;
    if (!notifications.why_not().empty()) {
        WARN("skipped: " << notifications.why_not());
        return;
    }
    World world;
    const std::string host = world.host("watched");
    const std::string soon = utc_in(std::chrono::hours(24 * 5 - 1));
    // Stored behind the daemon's back, before it starts: nobody asks for it.
    REQUIRE(
        secret_tool_store(host, R"({"token":"tok-watch-secret","expires_at":")" + soon + R"("})")
            .exit_code == 0);
    world.start();
    REQUIRE(warned_of(world, host));
    CHECK_THAT(world.daemon_log(), Catch::Contains("the stored token of " + host + " expires at " +
                                                   soon + " (in 4 days)"));

    Json shown;
    REQUIRE(wait_until(
        [&] {
            shown = notifications.with_summary(host);
            return !shown.empty();
        },
        std::chrono::seconds(10)));
    REQUIRE(shown.size() == 1);
    CHECK(shown[0].at("appname").at("data") == "hostkeeper");
    CHECK(shown[0].at("summary").at("data") == "The token of " + host + " expires in 4 days");
    const std::string body = shown[0].at("body").at("data").get<std::string>();
    CHECK_THAT(body, Catch::Contains("It expires at " + soon) &&
                         Catch::Contains("hostkeeper rotate " + host) &&
                         Catch::Contains("terraform login " + host));
    CHECK(notifications.history().dump().find("tok-watch-secret") == std::string::npos);
    CHECK(world.daemon_log().find("tok-watch-secret") == std::string::npos);

    // What the timer read is what status shows; a read warns no more.
    const Json expiries = world.status("credentials").at("expiries");
    REQUIRE(expiries.size() == 1);
    CHECK(expiries[0].at("expires_at") == soon);
    CHECK(expiries[0].at("expiry_stage") == "within_7_days");
    CHECK(helper(world.socket(), {"get", host}).exit_code == 0);
    CHECK_THAT(world.cli({"list"}).out, Catch::Contains("expires " + soon));
    CHECK(count_of(world.daemon_log(), "the stored token of " + host) == 1);
    CHECK(notifications.with_summary(host).size() == 1);

    // A daemon started again (on demand, after an idle exit) reads the record
    // beside the socket and does not warn of the same stage again.
    const fs::path record = world.socket().parent_path() / "expiry-warnings.json";
    REQUIRE(fs::exists(record));
    std::ifstream in(record);
    const std::string recorded{std::istreambuf_iterator<char>(in), {}};
    CHECK_THAT(recorded, Catch::Contains(host) && Catch::Contains("within_7_days"));
    CHECK(recorded.find("tok-watch-secret") == std::string::npos);
    world.stop_daemon();
    world.start();
    REQUIRE(wait_until([&] { return !world.status("credentials").at("expiries").empty(); },
                       std::chrono::seconds(10)));
    CHECK(count_of(world.daemon_log(), "the stored token of " + host) == 1);
    CHECK(notifications.with_summary(host).size() == 1);
    CHECK(secret_tool_clear(host).exit_code == 0);
}

TEST_CASE("notify = false: the journal warns, no notification is shown", "[expiry-watch]") {
    const NotificationServer notifications;
    if (!notifications.why_not().empty()) {
        WARN("skipped: " << notifications.why_not());
        return;
    }
    World world;
    world.top_level = "notify = false\n";
    const std::string host = world.host("quiet");
    REQUIRE(secret_tool_store(host, R"({"token":"tok-quiet","expires_at":")" +
                                        utc_in(std::chrono::hours(12)) + R"("})")
                .exit_code == 0);
    world.start();
    REQUIRE(warned_of(world, host));
    CHECK_THAT(world.daemon_log(), Catch::Contains("(in under a day)"));
    // A notification sent after the warning is shown; none of the daemon's.
    REQUIRE(run({"/usr/bin/gdbus", "call", "--session", "--dest", "org.freedesktop.Notifications",
                 "--object-path", "/org/freedesktop/Notifications", "--method",
                 "org.freedesktop.Notifications.Notify", "marker", "0", "\"\"",
                 "\"after the warning\"", "\"\"", "[]", "{}", "--", "-1"})
                .exit_code == 0);
    REQUIRE(wait_until([&] { return !notifications.with_summary("after the warning").empty(); },
                       std::chrono::seconds(10)));
    CHECK(notifications.with_summary(host).empty());
    CHECK(secret_tool_clear(host).exit_code == 0);
}

TEST_CASE("check learns a token's expiry from the host's token list when it can tell which",
          "[expiry-watch]") {
    World world;
    FakeTfe one(world, "auth", {{"at-only", "tok-only"}});
    FakeTfe known(world, "other", {{"at-a", "tok-a"}, {"at-b", "tok-b"}});
    FakeTfe many(world, "registry", {{"at-x", "tok-x"}, {"at-y", "tok-y"}});
    const std::string only_expiry = utc_in(std::chrono::hours(24 * 20));
    const std::string b_expiry = utc_in(std::chrono::hours(24 * 40));
    one.set_expiry("at-only", only_expiry);
    known.set_expiry("at-a", utc_in(std::chrono::hours(24 * 90)));
    known.set_expiry("at-b", b_expiry);
    many.set_expiry("at-x", utc_in(std::chrono::hours(24 * 9)));
    world.top_level = "notify = false\n";
    world.start();
    const std::string h_one = world.host("auth");
    const std::string h_known = world.host("other");
    const std::string h_many = world.host("registry");
    store_token(world, h_one, "tok-only");
    REQUIRE(helper(world.socket(), {"store", h_known}, R"({"token":"tok-b","token_id":"at-b"})")
                .exit_code == 0);
    store_token(world, h_many, "tok-x");

    // The user's only token: its expiry, shown by check, status and list.
    Result check = world.cli({"check", h_one});
    INFO(check.out << check.err);
    CHECK(check.exit_code == 0);
    CHECK_THAT(check.out, Catch::Contains("valid (user hk-rotor); expires " + only_expiry +
                                          " (from the host's API)"));
    // The one whose id was stored, among several.
    check = world.cli({"check", h_known});
    CHECK_THAT(check.out, Catch::Contains("expires " + b_expiry + " (from the host's API)"));
    // Several, none known: not guessed.
    const Json many_answer = world.ask({{"op", "check"}, {"host", h_many}});
    CHECK(many_answer.at("result") == "valid");
    CHECK_FALSE(many_answer.contains("learned_expires_at"));
    CHECK(many_answer.at("expiry_note") == "expiry unknown: 2 tokens for this user");
    CHECK_THAT(world.cli({"doctor"}).out,
               Catch::Contains("expiry unknown: 2 tokens for this user") &&
                   Catch::Contains("expires " + only_expiry));

    const Json expiries = world.status("credentials").at("expiries");
    std::map<std::string, std::string> by_host;
    for (const Json& e : expiries) by_host[e.at("host")] = e.at("expires_at");
    CHECK(by_host[h_one] == only_expiry);
    CHECK(by_host[h_known] == b_expiry);
    CHECK_FALSE(by_host.count(h_many));
    CHECK_THAT(world.cli({"list"}).out, Catch::Contains("expires " + only_expiry));
    // Remembered past the credential cache: a fresh read keeps it.
    REQUIRE(world.cli({"flush"}).exit_code == 0);
    CHECK(helper(world.socket(), {"get", h_one}).out == R"({"token":"tok-only"})"
                                                        "\n");
    CHECK(world.status("credentials").at("expiries").size() == 2);
    // A new token forgets it.
    store_token(world, h_one, "tok-only");
    CHECK(world.status("credentials").at("expiries").size() == 1);
    for (const std::string& host : {h_one, h_known, h_many}) forget_token(world, host);
}

}  // namespace test_expiry_warnings
