// A locked keyring, junk in it, and no Secret Service at all: each gives an
// error that says what to do, never "{}".
#include <catch2/catch.hpp>

#include "harness.hpp"

namespace test_keyring_failures {

using namespace hostkeeper::it;
namespace fs = std::filesystem;

namespace {
Result lock_login_collection() {
    return run({"/usr/bin/dbus-send", "--session", "--print-reply",
                "--dest=org.freedesktop.secrets", "/org/freedesktop/secrets",
                "org.freedesktop.Secret.Service.Lock",
                "array:objpath:/org/freedesktop/secrets/collection/login"});
}
}  // namespace

TEST_CASE("a locked collection is an error, not '{}'", "[keyring-failures]") {
    const fs::path socket = fresh_socket();
    const std::string creds = R"({"token":"locked-away"})";
    REQUIRE(helper(socket, {"store", "locked.example.com"}, creds).exit_code == 0);
    REQUIRE(run({bin("hostkeeper"), "--socket", socket.string(), "stop"}).exit_code ==
            0);  // nothing cached

    REQUIRE(lock_login_collection().exit_code == 0);
    // No prompter can run on this bus, so the unlock request fails at once.
    const Result got = helper(socket, {"get", "locked.example.com"});
    CHECK(got.exit_code == 1);
    CHECK(got.out.empty());
    CHECK_THAT(got.err, Catch::Contains("locked"));
    CHECK_THAT(got.err, Catch::Contains("unlock it"));

    // Storing into a locked collection fails too, and says so.
    const Result stored = helper(socket, {"store", "other.example.com"}, R"({"token":"x"})");
    CHECK(stored.exit_code == 1);
    CHECK_THAT(stored.err, Catch::Contains("locked"));

    const Result forgot = helper(socket, {"forget", "locked.example.com"});
    CHECK(forgot.exit_code == 1);
    CHECK_THAT(forgot.err, Catch::Contains("locked"));

    // A host with no item at all is still "none": attributes are searchable while locked.
    const Result none = helper(socket, {"get", "registry.terraform.io"});
    CHECK(none.exit_code == 0);
    CHECK(none.out == "{}\n");

    // And the error was not cached as "none".
    const Result again = helper(socket, {"get", "locked.example.com"});
    CHECK(again.exit_code == 1);
}

TEST_CASE("no Secret Service on the bus is a clear error", "[no-secret-service]") {
    const fs::path socket = fresh_socket();
    const Result got = helper(socket, {"get", "app.example.com"});
    CHECK(got.exit_code == 1);
    CHECK(got.out.empty());
    CHECK_THAT(got.err, Catch::Contains("no Secret Service on the session bus"));

    const Result stored = helper(socket, {"store", "app.example.com"}, R"({"token":"x"})");
    CHECK(stored.exit_code == 1);
    CHECK_THAT(stored.err, Catch::Contains("Secret Service"));
}

TEST_CASE("no session bus at all is a clear error", "[no-secret-service]") {
    const fs::path socket = fresh_socket();
    RunOptions options;
    options.env["DBUS_SESSION_BUS_ADDRESS"] = std::nullopt;
    // GLib would otherwise find the bus at $XDG_RUNTIME_DIR/bus.
    const fs::path empty_runtime = test_root() / "no-bus-runtime";
    fs::create_directories(empty_runtime);
    options.env["XDG_RUNTIME_DIR"] = empty_runtime.string();
    const Result got = run({bin("terraform-credentials-hostkeeper"), "--socket=" + socket.string(),
                            "get", "app.example.com"},
                           options);
    CHECK(got.exit_code == 1);
    CHECK(got.out.empty());
    CHECK_THAT(got.err, Catch::Contains("D-Bus session bus"));
}

}  // namespace test_keyring_failures
