// git credentials (git_get, git_store, git_erase) through the real daemon,
// against the real keyrings: a real gnome-keyring (items read back with
// secret-tool) and a real pass store (entries read back with `pass show`);
// list, migrate from one to the other, and a Terraform token that git_erase
// never touches.
#include <catch2/catch.hpp>
#include <string>

#include "helper/client/connection.hpp"
#include "https_world.hpp"
#include "keyring_control.hpp"
#include "pass_home.hpp"

namespace test_git_items {

using namespace hostkeeper::it;

namespace {

Result secret_tool(const std::vector<std::string>& args) {
    std::vector<std::string> argv{"/usr/bin/secret-tool"};
    argv.insert(argv.end(), args.begin(), args.end());
    return run(argv);
}

Json git_op(const std::string& op, Json fields) {
    fields["op"] = op;
    fields["protocol"] = "https";
    return fields;
}

// One request to the daemon of a UserHome (started on demand by a command first).
Json ask_home(const UserHome& u, Json request) {
    request["v"] = 1;
    const hostkeeper::helper::client::Deadline deadline(std::chrono::seconds(30));
    int error = 0;
    auto connection = hostkeeper::helper::client::Connection::open(u.socket, deadline, error);
    if (!connection) throw std::runtime_error("cannot connect: errno " + std::to_string(error));
    return connection->round_trip(request, deadline);
}

const Json* git_listed(const Json& list, const std::string& url) {
    for (const Json& item : list.at("git")) {
        if (item.at("url") == url) return &item;
    }
    return nullptr;
}

}  // namespace

TEST_CASE("git items in the Secret Service: store, get, list, erase; the Terraform token stays",
          "[items]") {
    World world;
    world.start({}, "[hosts.\"git-cfg.example.com\"]\ngit_username = \"deploy\"\n");
    const std::string host = "git-it.example.com";
    store_token(world, host, "tok-git-it-terraform");
    store_token(world, "git-cfg.example.com", "tok-git-cfg");

    // The Terraform token answers, as oauth2 or as the configured username.
    Json got = world.ask(git_op("git_get", {{"host", host}, {"path", "grp/r.git"}}));
    CHECK(got.at("source") == "terraform");
    CHECK(got.at("username") == "oauth2");
    CHECK(got.at("password") == "tok-git-it-terraform");
    got = world.ask(git_op("git_get", {{"host", "git-cfg.example.com"}}));
    CHECK(got.at("username") == "deploy");
    CHECK(got.at("password") == "tok-git-cfg");
    // What git stores back after using it is not kept a second time.
    CHECK(world
              .ask(git_op(
                  "git_store",
                  {{"host", host}, {"username", "oauth2"}, {"password", "tok-git-it-terraform"}}))
              .at("stored") == false);

    // A credential typed by the user: an item of its own, with its attributes.
    REQUIRE(world
                .ask(git_op("git_store", {{"host", host},
                                          {"path", "grp/r.git"},
                                          {"username", "alice@corp"},
                                          {"password", "typed-pw"},
                                          {"password_expiry_utc", 4102444800U}}))
                .at("stored") == true);
    const std::string url = "https://alice%40corp@" + host + "/grp/r.git";
    const Result seen = secret_tool(
        {"search", "--all", "xdg:schema", "io.hostkeeper.GitCredentials", "host", host});
    CHECK_THAT(seen.err, Catch::Contains("attribute.url = " + url));
    CHECK_THAT(seen.err, Catch::Contains("attribute.path = grp/r.git"));
    CHECK_THAT(seen.err, Catch::Contains("attribute.username = alice@corp"));
    CHECK_THAT(seen.err, Catch::Contains("attribute.protocol = https"));
    CHECK_THAT(seen.out, Catch::Contains("label = hostkeeper git: https://" + host + "/grp/r.git"));
    CHECK(secret_tool({"lookup", "xdg:schema", "io.hostkeeper.GitCredentials", "url", url}).out ==
          R"({"password":"typed-pw","password_expiry_utc":4102444800})");
    got = world.ask(git_op("git_get", {{"host", host}, {"path", "/grp/r.git"}}));
    CHECK(got.at("source") == "git");
    CHECK(got.at("username") == "alice@corp");
    CHECK(got.at("password") == "typed-pw");
    CHECK(got.at("password_expiry_utc") == 4102444800U);
    // Another path is not this item's: the token answers there.
    CHECK(world.ask(git_op("git_get", {{"host", host}, {"path", "grp/other.git"}})).at("source") ==
          "terraform");

    const Json list = world.ask({{"op", "list"}});
    const Json* item = git_listed(list, url);
    REQUIRE(item != nullptr);
    CHECK(item->at("host") == host);
    CHECK(item->at("path") == "grp/r.git");
    CHECK(item->at("username") == "alice@corp");
    CHECK(item->at("stored").is_string());
    CHECK(list.dump().find("typed-pw") == std::string::npos);
    const Result listed = world.cli({"list"});
    CHECK_THAT(listed.out, Catch::Contains("git credentials:\n  " + url + "  user alice@corp"));

    // A locked keyring: keyring_locked, never found:false.
    REQUIRE(lock_login_collection_seen_by(world.socket()).exit_code == 0);
    got = world.ask(git_op("git_get", {{"host", host}, {"path", "grp/r.git"}}));
    CHECK(got.at("error").at("code") == "keyring_locked");
    REQUIRE(unlock_login_collection());

    // git erases what the server refused: only git items go, the token stays.
    CHECK(world
              .ask(git_op(
                  "git_erase",
                  {{"host", host}, {"username", "oauth2"}, {"password", "tok-git-it-terraform"}}))
              .at("erased") == 0);
    CHECK(world
              .ask(git_op("git_erase",
                          {{"host", host}, {"path", "grp/r.git"}, {"password", "typed-pw"}}))
              .at("erased") == 1);
    CHECK(
        secret_tool({"search", "--all", "xdg:schema", "io.hostkeeper.GitCredentials", "host", host})
            .err.find("attribute.url") == std::string::npos);
    CHECK(helper(world.socket(), {"get", host}).out == R"({"token":"tok-git-it-terraform"})"
                                                       "\n");
    CHECK(world.ask(git_op("git_get", {{"host", host}})).at("source") == "terraform");
    // http is refused by the daemon too.
    Json http = git_op("git_get", {{"host", host}});
    http["protocol"] = "http";
    CHECK(world.ask(http).at("error").at("code") == "bad_request");
    forget_token(world, host);
    forget_token(world, "git-cfg.example.com");
}

TEST_CASE("git items in a pass store: hostkeeper/git/B64 entries, list, erase, token stays",
          "[pass-cli]") {
    PassHome u;
    u.init_store(false);
    REQUIRE(u.helper({"store", "gitpass.example"}, R"({"token":"tok-gitpass"})").exit_code == 0);
    REQUIRE_THAT(u.hostkeeper({"status"}).out, Catch::Contains("keyring backend: pass"));
    REQUIRE(ask_home(u, git_op("git_store", {{"host", "gitpass.example"},
                                             {"username", "bob"},
                                             {"password", "pass-pw"},
                                             {"oauth_refresh_token", "rt"}}))
                .at("stored") == true);
    // The entry: the URL in unpadded base64url, holding the item's JSON with its URL.
    const std::string url = "https://bob@gitpass.example";
    const Result b64 = u.sh("printf %s '" + url + "' | base64 -w0 | tr '+/' '-_' | tr -d =");
    REQUIRE(b64.exit_code == 0);
    const std::string entry = "hostkeeper/git/" + b64.out;
    CHECK(u.sh("pass show " + entry).out ==
          R"({"password":"pass-pw","oauth_refresh_token":"rt","url":")" + url + "\"}\n");
    Json got = ask_home(u, git_op("git_get", {{"host", "gitpass.example"}}));
    CHECK(got.at("source") == "git");
    CHECK(got.at("password") == "pass-pw");
    CHECK(got.at("oauth_refresh_token") == "rt");
    const Json list = ask_home(u, {{"op", "list"}});
    const Json* item = git_listed(list, url);
    REQUIRE(item != nullptr);
    CHECK(item->at("label") == entry);
    CHECK(item->at("path").is_null());
    CHECK_THAT(u.hostkeeper({"list"}).out, Catch::Contains("  " + url + "  user bob"));

    CHECK(ask_home(u, git_op("git_erase", {{"host", "gitpass.example"}})).at("erased") == 1);
    CHECK_FALSE(std::filesystem::exists(u.store / (entry + ".gpg")));
    CHECK(u.helper({"get", "gitpass.example"}).out == "{\"token\":\"tok-gitpass\"}\n");
    CHECK(ask_home(u, git_op("git_get", {{"host", "gitpass.example"}})).at("source") ==
          "terraform");
}

TEST_CASE("migrate moves git items from the Secret Service to pass", "[pass-cli]") {
    PassHome u(true);
    u.init_store(false);
    REQUIRE(u.helper({"store", "gitmig.example"}, R"({"token":"tok-gitmig"})").exit_code == 0);
    REQUIRE(ask_home(u, git_op("git_store", {{"host", "gitmig.example"},
                                             {"path", "a/b.git"},
                                             {"username", "carol"},
                                             {"password", "mig-pw"}}))
                .at("stored") == true);
    const std::string url = "https://carol@gitmig.example/a/b.git";
    const Result r = u.hostkeeper({"migrate", "--to", "pass"});
    INFO(r.out << r.err);
    CHECK(r.exit_code == 0);
    CHECK_THAT(r.out, Catch::Contains("moved    git " + url));
    CHECK_THAT(r.out, Catch::Contains("2 item(s) moved from secret-service to pass\n"));
    CHECK(secret_tool({"search", "--all", "xdg:schema", "io.hostkeeper.GitCredentials", "host",
                       "gitmig.example"})
              .err.find("attribute.url") == std::string::npos);
    // The next daemon (started by the helper) reads config.toml's pass.
    REQUIRE(u.hostkeeper({"stop"}).exit_code == 0);
    CHECK(u.helper({"get", "gitmig.example"}).out == "{\"token\":\"tok-gitmig\"}\n");
    CHECK_THAT(u.hostkeeper({"status"}).out,
               Catch::Contains("keyring backend: pass (configured: pass)"));
    const Json got =
        ask_home(u, git_op("git_get", {{"host", "gitmig.example"}, {"path", "a/b.git"}}));
    CHECK(got.at("source") == "git");
    CHECK(got.at("password") == "mig-pw");
    CHECK(ask_home(u, git_op("git_erase", {{"host", "gitmig.example"}, {"path", "a/b.git"}}))
              .at("erased") == 1);
    REQUIRE(u.helper({"forget", "gitmig.example"}).exit_code == 0);
}

}  // namespace test_git_items
