// The credentials path end to end: the helper binary, an on-demand daemon,
// and a real gnome-keyring-daemon.
#include <signal.h>

#include <catch2/catch.hpp>
#include <chrono>
#include <nlohmann/json.hpp>
#include <string>

#include "harness.hpp"

namespace test_credentials {

using namespace hostkeeper::it;
namespace fs = std::filesystem;

namespace {

const char* const kSchema = "io.hostkeeper.Credentials";

Result secret_tool(const std::vector<std::string>& args,
                   const std::optional<std::string>& input = std::nullopt) {
    std::vector<std::string> argv{"/usr/bin/secret-tool"};
    argv.insert(argv.end(), args.begin(), args.end());
    RunOptions options;
    options.input = input;
    return run(argv, options);
}

std::string keyring_secret(const std::string& host) {
    return secret_tool({"lookup", "xdg:schema", kSchema, "host", host}).out;
}

Result status_json(const fs::path& socket) {
    return run({bin("hostkeeper"), "--socket", socket.string(), "status", "--json"});
}

}  // namespace

TEST_CASE("store, get and forget through the helper and the keyring", "[credentials]") {
    const fs::path socket = fresh_socket();
    const std::string creds = R"({"token":"tok-store-get-forget-1234567890"})";

    const Result stored = helper(socket, {"store", "app.example.com"}, creds);
    REQUIRE(stored.exit_code == 0);
    CHECK(stored.out.empty());
    CHECK(keyring_secret("app.example.com") == creds);

    const Result got = helper(socket, {"get", "app.example.com"});
    REQUIRE(got.exit_code == 0);
    CHECK(got.out == creds + "\n");

    const Result forgot = helper(socket, {"forget", "app.example.com"});
    REQUIRE(forgot.exit_code == 0);
    CHECK(forgot.out.empty());
    CHECK(keyring_secret("app.example.com").empty());
    const Result after = helper(socket, {"get", "app.example.com"});
    CHECK(after.exit_code == 0);
    CHECK(after.out == "{}\n");

    // forget succeeds when there was nothing.
    CHECK(helper(socket, {"forget", "never-stored.example.com"}).exit_code == 0);
}

TEST_CASE("the whole credentials object is kept, in order", "[credentials]") {
    const fs::path socket = fresh_socket();
    const std::string creds =
        R"({"token":"t-ordered","zeta":{"nested":[1,2,3]},"alpha":"ünïcødé","n":1.5})";
    REQUIRE(helper(socket, {"store", "whole.example.com"}, creds + "\n").exit_code == 0);
    CHECK(helper(socket, {"get", "whole.example.com"}).out == creds + "\n");
    // The keyring holds the same text, which a fresh daemon reads back.
    CHECK(keyring_secret("whole.example.com") == creds);
    run({bin("hostkeeper"), "--socket", socket.string(), "stop"});
    CHECK(helper(socket, {"get", "whole.example.com"}).out == creds + "\n");
}

TEST_CASE("an item stored by secret-tool with our schema is read by the helper", "[credentials]") {
    const fs::path socket = fresh_socket();
    const std::string creds = R"({"token":"from-secret-tool-abc"})";
    REQUIRE(secret_tool({"store", "--label=typed by a person", "xdg:schema", kSchema, "host",
                         "st.example.com"},
                        creds)
                .exit_code == 0);
    const Result got = helper(socket, {"get", "st.example.com"});
    CHECK(got.exit_code == 0);
    CHECK(got.out == creds + "\n");

    // A bare token pasted into secret-tool is served as {"token": ...}.
    REQUIRE(
        secret_tool({"store", "--label=bare", "xdg:schema", kSchema, "host", "bare.example.com"},
                    "bare-token.123")
            .exit_code == 0);
    CHECK(helper(socket, {"get", "bare.example.com"}).out == "{\"token\":\"bare-token.123\"}\n");

    // Junk is an error that says what to do, never a wrong token.
    REQUIRE(
        secret_tool({"store", "--label=junk", "xdg:schema", kSchema, "host", "junk.example.com"},
                    "two words")
            .exit_code == 0);
    const Result junk = helper(socket, {"get", "junk.example.com"});
    CHECK(junk.exit_code == 1);
    CHECK_THAT(junk.err, Catch::Contains("junk.example.com") && Catch::Contains("store it again"));
}

TEST_CASE("an item stored by the helper is found by secret-tool search", "[credentials]") {
    const fs::path socket = fresh_socket();
    REQUIRE(helper(socket, {"store", "search.example.com"}, R"({"token":"findable"})").exit_code ==
            0);
    const Result found = secret_tool({"search", "host", "search.example.com"});
    const std::string all = found.out + found.err;
    CHECK(found.exit_code == 0);
    CHECK_THAT(all, Catch::Contains("label = hostkeeper: search.example.com"));
    CHECK_THAT(all, Catch::Contains("schema = io.hostkeeper.Credentials"));
    CHECK_THAT(all, Catch::Contains("attribute.host = search.example.com"));
    CHECK_THAT(all, Catch::Contains(R"(secret = {"token":"findable"})"));
}

TEST_CASE("Unicode and punycode spellings of a host name one item", "[credentials]") {
    const fs::path socket = fresh_socket();
    REQUIRE(helper(socket, {"store", "Bücher.Example.COM:443"}, R"({"token":"idn"})").exit_code ==
            0);
    CHECK(helper(socket, {"get", "xn--bcher-kva.example.com"}).out == "{\"token\":\"idn\"}\n");
    CHECK(keyring_secret("xn--bcher-kva.example.com") == R"({"token":"idn"})");
    CHECK(helper(socket, {"get", "tfe.example.com:8443"}).out ==
          "{}\n");  // other ports are other hosts
}

TEST_CASE("bad store input is refused and the stored item stays as it was", "[credentials]") {
    const fs::path socket = fresh_socket();
    const std::string good = R"({"token":"keep-me"})";
    REQUIRE(helper(socket, {"store", "keep.example.com"}, good).exit_code == 0);
    const auto [input, reason] = GENERATE(table<std::string, std::string>({
        {"not json at all", "not valid JSON"},
        {R"(["token","x"])", "JSON object"},
        {R"({"token":42})", "must be a string"},
        {R"({"user":"x"})", "no \"token\""},
        {R"({"token":"x")", "not valid JSON"},
        {"", "not valid JSON"},
        {R"({"token":")" + std::string(70 * 1024, 'a') + R"("})", "64 KiB"},
        {R"({"token":")" + std::string(62 * 1024, 'a') + R"("})", "over the limit"},
    }));
    CAPTURE(reason);
    const Result refused = helper(socket, {"store", "keep.example.com"}, input);
    CHECK(refused.exit_code == 2);
    CHECK_THAT(refused.err, Catch::Contains(reason));
    CHECK_THAT(refused.err, Catch::Contains("nothing was stored"));
    CHECK(refused.out.empty());
    CHECK(helper(socket, {"get", "keep.example.com"}).out == good + "\n");
    CHECK(keyring_secret("keep.example.com") == good);
}

TEST_CASE("unknown hosts are '{}' and the answer is cached", "[credentials]") {
    const fs::path socket = fresh_socket();
    for (int i = 0; i < 3; ++i) {
        const Result got = helper(socket, {"get", "registry.terraform.io"});
        CHECK(got.exit_code == 0);
        CHECK(got.out == "{}\n");
    }
    const Result status = status_json(socket);
    REQUIRE(status.exit_code == 0);
    CHECK_THAT(status.out, Catch::Contains("\"keyring_lookups\": 1"));
    CHECK_THAT(status.out, Catch::Contains("\"negative\": 1"));
    CHECK_THAT(status.out, Catch::Contains("\"hits\": 2"));
}

TEST_CASE("flush and SIGHUP make the daemon read the keyring again", "[credentials]") {
    // (An item edited behind the daemon's back is seen at once: see
    // test_keyring_lifecycle.cpp. Flush is for what the keyring does not
    // announce, such as a secret replaced in place.)
    const fs::path socket = fresh_socket();
    Daemon daemon(socket);
    const auto lookups = [&] {
        const Result r = run({bin("hostkeeper"), "--socket", socket.string(), "status", "--json"});
        return nlohmann::json::parse(r.out).at("credentials").value("keyring_lookups", -1LL);
    };
    // The expiry watch's first look (2 s after start) reads every stored
    // host: the counts below start after it.
    REQUIRE(wait_until(
        [&] { return daemon.log().find("expiry watch: looked at") != std::string::npos; },
        std::chrono::seconds(15)));
    REQUIRE(helper(socket, {"store", "flush.example.com"}, R"({"token":"v1"})").exit_code == 0);
    // Cached once the store's own keyring signal has gone by.
    REQUIRE(wait_until(
        [&] {
            (void)helper(socket, {"get", "flush.example.com"});
            const long long read = lookups();
            (void)helper(socket, {"get", "flush.example.com"});
            return lookups() == read;
        },
        std::chrono::seconds(5)));
    long long before = lookups();
    CHECK(helper(socket, {"get", "flush.example.com"}).out == "{\"token\":\"v1\"}\n");
    CHECK(lookups() == before);  // a cache hit
    const Result flushed =
        run({bin("hostkeeper"), "--socket", socket.string(), "flush", "flush.example.com"});
    CHECK(flushed.exit_code == 0);
    CHECK_THAT(flushed.out, Catch::Contains("flushed 1 cached entry"));
    CHECK(helper(socket, {"get", "flush.example.com"}).out == "{\"token\":\"v1\"}\n");
    CHECK(lookups() == before + 1);  // read from the keyring again

    before = lookups();
    CHECK(helper(socket, {"get", "flush.example.com"}).exit_code == 0);
    CHECK(lookups() == before);
    ::kill(daemon.pid(), SIGHUP);
    CHECK(wait_until([&] { return daemon.log().find("SIGHUP: flushed") != std::string::npos; },
                     std::chrono::seconds(5)));
    CHECK(helper(socket, {"get", "flush.example.com"}).out == "{\"token\":\"v1\"}\n");
    CHECK(lookups() == before + 1);
}

TEST_CASE("hostkeeper status, flush and stop", "[credentials]") {
    const fs::path socket = fresh_socket();
    const Result not_running = run({bin("hostkeeper"), "--socket", socket.string(), "status"});
    CHECK(not_running.exit_code == 4);
    CHECK_THAT(not_running.err, Catch::Contains("not running"));

    const Result started = run({bin("hostkeeper"), "--socket", socket.string(), "start"});
    CHECK(started.exit_code == 0);
    CHECK_THAT(started.out, Catch::Contains("hostkeeperd 0.1.0 is running at " + socket.string()));
    REQUIRE(daemons_matching(socket.string()).size() == 1);
    // Starting again finds the running one rather than a second.
    CHECK(run({bin("hostkeeper"), "--socket", socket.string(), "start"}).exit_code == 0);
    CHECK(daemons_matching(socket.string()).size() == 1);

    REQUIRE(helper(socket, {"get", "status.example.com"}).exit_code == 0);
    const Result status = run({bin("hostkeeper"), "--socket", socket.string(), "status"});
    CHECK(status.exit_code == 0);
    CHECK_THAT(status.out, Catch::Contains("hostkeeperd 0.1.0 (protocol 1), pid "));
    CHECK_THAT(status.out, Catch::Contains("started on demand"));
    CHECK_THAT(status.out, Catch::Contains("1 entries (0 with credentials, 1 without)"));

    const Result flushed = run({bin("hostkeeper"), "--socket", socket.string(), "flush"});
    CHECK(flushed.exit_code == 0);
    CHECK_THAT(flushed.out, Catch::Contains("flushed 1 cached entry"));

    const Result stopped = run({bin("hostkeeper"), "--socket", socket.string(), "stop"});
    CHECK(stopped.exit_code == 0);
    CHECK_THAT(stopped.out, Catch::Contains("hostkeeperd stopped"));
    CHECK_FALSE(fs::exists(socket));
    CHECK(run({bin("hostkeeper"), "--socket", socket.string(), "stop"}).out ==
          "hostkeeperd is not running\n");
}

}  // namespace test_credentials
