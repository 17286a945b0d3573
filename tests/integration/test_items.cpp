// What the keyring holds, through the real daemon: `list` and the Docker
// credentials against a real gnome-keyring (read back with secret-tool),
// and `check` against a real HTTPS server speaking TFE's account/details.
#include <catch2/catch.hpp>
#include <chrono>
#include <ctime>
#include <string>

#include "https_world.hpp"
#include "keyring_control.hpp"

namespace test_items {

using namespace hostkeeper::it;
using hostkeeper::test::json_response;
using hostkeeper::test::Request;
using hostkeeper::test::Response;

namespace {

Result secret_tool(const std::vector<std::string>& args) {
    std::vector<std::string> argv{"/usr/bin/secret-tool"};
    argv.insert(argv.end(), args.begin(), args.end());
    return run(argv);
}

// secret-tool search --all's "attribute.NAME = VALUE" lines for the Docker schema.
std::string docker_items_seen(const std::string& server) {
    return secret_tool({"search", "--all", "xdg:schema", "io.hostkeeper.DockerCredentials",
                        "server", server})
        .err;
}

std::time_t parse_utc(const std::string& text) {
    std::tm tm{};
    REQUIRE(::strptime(text.c_str(), "%Y-%m-%dT%H:%M:%SZ", &tm) != nullptr);
    return ::timegm(&tm);
}

}  // namespace

TEST_CASE("list reads the keyring: labels, times and field names, locked items as locked",
          "[items]") {
    World world;
    world.start();
    store_token(world, "list-a.example.com", "tok-list-a-1234567890");
    REQUIRE(helper(world.socket(), {"store", "list-b.example.com:8443"},
                   R"({"token":"tok-list-b","organization":"acme"})")
                .exit_code == 0);
    const std::time_t now = std::time(nullptr);

    Json answer = world.ask({{"op", "list"}});
    REQUIRE(answer.at("ok") == true);
    CHECK(answer.at("backend") == "secret-service");
    std::map<std::string, Json> by_host;
    for (const Json& h : answer.at("hosts")) by_host[h.at("host").get<std::string>()] = h;
    REQUIRE(by_host.count("list-a.example.com") == 1);
    REQUIRE(by_host.count("list-b.example.com:8443") == 1);
    const Json& b = by_host["list-b.example.com:8443"];
    CHECK(b.at("label") == "hostkeeper: list-b.example.com:8443");
    CHECK(b.at("fields") == Json::array({"token", "organization"}));
    CHECK(b.at("locked") == false);
    const std::time_t stored = parse_utc(b.at("stored").get<std::string>());
    CHECK(stored <= now + 1);
    CHECK(stored >= now - 120);
    CHECK(answer.dump().find("tok-list") == std::string::npos);

    // Locked: still listed (attributes are readable), no fields, no token.
    REQUIRE(lock_login_collection_seen_by(world.socket()).exit_code == 0);
    answer = world.ask({{"op", "list"}});
    REQUIRE(answer.at("ok") == true);
    std::size_t locked = 0;
    for (const Json& h : answer.at("hosts")) {
        if (h.at("locked") == true) {
            ++locked;
            CHECK(h.at("fields").is_null());
        }
    }
    CHECK(locked >= 2);
    REQUIRE(unlock_login_collection());
    forget_token(world, "list-a.example.com");
    forget_token(world, "list-b.example.com:8443");
    answer = world.ask({{"op", "list"}});
    for (const Json& h : answer.at("hosts"))
        CHECK(h.at("host").get<std::string>().rfind("list-", 0) != 0);
}

TEST_CASE("Docker credentials are items of their own kind in the Secret Service", "[items]") {
    World world;
    world.start();
    const std::string server = "docker-it.example.com:5000";
    // A Terraform item for the same host first: the Docker item must not touch it.
    store_token(world, server, "tok-terraform-docker-it");
    Json stored = world.ask({{"op", "docker_store"},
                             {"server", server},
                             {"username", "alice"},
                             {"secret", "docker-pw-1"}});
    REQUIRE(stored.at("ok") == true);
    std::string seen = docker_items_seen(server);
    CHECK_THAT(seen, Catch::Contains("attribute.username = alice"));
    CHECK(secret_tool({"lookup", "xdg:schema", "io.hostkeeper.DockerCredentials", "server", server})
              .out == "docker-pw-1");
    CHECK(helper(world.socket(), {"get", server}).out == R"({"token":"tok-terraform-docker-it"})"
                                                         "\n");

    // Another username for the same server replaces the item: one item per server.
    stored = world.ask({{"op", "docker_store"},
                        {"server", server},
                        {"username", "bob"},
                        {"secret", "docker-pw-2"}});
    REQUIRE(stored.at("ok") == true);
    seen = docker_items_seen(server);
    CHECK(count_of(seen, "attribute.server = ") == 1);
    CHECK_THAT(seen, Catch::Contains("attribute.username = bob"));
    Json got = world.ask({{"op", "docker_get"}, {"server", server}});
    CHECK(got.at("username") == "bob");
    CHECK(got.at("secret") == "docker-pw-2");
    CHECK(world.ask({{"op", "docker_list"}}).at("servers").at(server) == "bob");

    // Forgetting the Terraform item leaves the Docker item, and the other way round.
    forget_token(world, server);
    CHECK(world.ask({{"op", "docker_get"}, {"server", server}}).at("found") == true);
    store_token(world, server, "tok-terraform-docker-it-2");
    CHECK(world.ask({{"op", "docker_erase"}, {"server", server}}).at("erased") == true);
    CHECK(world.ask({{"op", "docker_get"}, {"server", server}}).at("found") == false);
    CHECK(docker_items_seen(server).find("attribute.server") == std::string::npos);
    CHECK(helper(world.socket(), {"get", server}).out == R"({"token":"tok-terraform-docker-it-2"})"
                                                         "\n");
    forget_token(world, server);

    // A locked keyring: keyring_locked, never "not found" (no prompt can be answered here).
    REQUIRE(world
                .ask({{"op", "docker_store"},
                      {"server", server},
                      {"username", "carol"},
                      {"secret", "docker-pw-3"}})
                .at("ok") == true);
    REQUIRE(lock_login_collection_seen_by(world.socket()).exit_code == 0);
    got = world.ask({{"op", "docker_get"}, {"server", server}});
    CHECK(got.at("ok") == false);
    CHECK(got.at("error").at("code") == "keyring_locked");
    REQUIRE(unlock_login_collection());
    CHECK(world.ask({{"op", "docker_erase"}, {"server", server}}).at("erased") == true);
}

TEST_CASE("check asks a TFE-like host with the stored token, and only that host", "[items]") {
    World world;
    const std::string good = "tok-check-good-" + std::to_string(world.server.port());
    world.serve("auth", json_response(R"({"tfe.v2":"/api/v2/","modules.v1":"/m/"})"));
    world.server.route("auth.localhost", "/api/v2/account/details", [good](const Request& r) {
        if (r.authorization != "Bearer " + good)
            return json_response(R"({"errors":[{"status":"401","title":"unauthorized"}]})", 401);
        Response ok = json_response(
            R"({"data":{"id":"user-1","type":"users","attributes":{"username":"hk-alice"}}})");
        ok.headers = {{"Content-Type", "application/vnd.api+json"}};
        return ok;
    });
    world.serve("other", json_response(R"({"modules.v1":"/m/"})"));
    world.start();
    const std::string tfe = world.host("auth");

    Json answer = world.ask({{"op", "check"}, {"host", tfe}});
    CHECK(answer.at("result") == "no_credentials");
    CHECK(world.server.requests().empty());

    store_token(world, tfe, good);
    answer = world.ask({{"op", "check"}, {"host", tfe}});
    CHECK(answer.at("result") == "valid");
    CHECK(answer.at("user") == "hk-alice");

    store_token(world, tfe, "tok-check-revoked");
    answer = world.ask({{"op", "check"}, {"host", tfe}});
    CHECK(answer.at("result") == "rejected");
    CHECK(answer.at("status") == 401);
    CHECK_THAT(answer.at("message").get<std::string>(), Catch::Contains("terraform login " + tfe));
    Json rejected = world.ask({{"op", "status"}}).at("credentials").at("rejected");
    REQUIRE(rejected.size() == 1);
    CHECK(rejected[0].at("host") == tfe);
    const Result status = world.cli({"status"});
    CHECK(status.exit_code == 0);
    CHECK_THAT(status.out, Catch::Contains("token refused: " + tfe + " (HTTP 401 from https://" +
                                           tfe + "/api/v2/account/details") &&
                               Catch::Contains("run terraform login " + tfe));

    store_token(world, world.host("other"), "tok-check-plain");
    CHECK(world.ask({{"op", "check"}, {"host", world.host("other")}}).at("result") == "accepted");

    // Every request carried the token stored for its own host.
    for (const Request& r : world.server.requests()) {
        CAPTURE(r.host, r.path);
        REQUIRE(r.authorization);
        if (r.host == "other.localhost")
            CHECK(*r.authorization == "Bearer tok-check-plain");
        else
            CHECK(r.authorization->rfind("Bearer tok-check-", 0) == 0);
    }
    forget_token(world, tfe);
    forget_token(world, world.host("other"));
    CHECK(world.ask({{"op", "status"}}).at("credentials").at("rejected").empty());
}

}  // namespace test_items
