// `rotate` and `hostkeeper rotate` through the real daemon and the real
// gnome-keyring, against a TFE-like HTTPS server (fake_tfe.hpp) that
// enforces expiry and revocation: end to end, failures half way (the old
// token stays or is put back), a host without tfe.v2, a host without a
// token, and the background rotation of `rotate = true`.
#include <catch2/catch.hpp>
#include <chrono>
#include <string>
#include <thread>

#include "fake_tfe.hpp"
#include "https_world.hpp"

namespace test_rotate {

using namespace hostkeeper::it;

namespace {

// The stored credentials object, as the Terraform helper's `get` prints it.
Json stored(const World& world, const std::string& host) {
    const Result got = helper(world.socket(), {"get", host});
    INFO(got.err);
    REQUIRE(got.exit_code == 0);
    return Json::parse(got.out);
}

void store_object(const World& world, const std::string& host, const Json& credentials) {
    REQUIRE(world.ask({{"op", "store"}, {"host", host}, {"credentials", credentials}}).at("ok") ==
            true);
}

// No token sent by any request went to another host than its own.
void tokens_stayed_home(const World& world) {
    for (const auto& r : world.server.requests()) {
        CAPTURE(r.host, r.method, r.path);
        if (r.host != "auth.localhost") CHECK_FALSE(r.authorization.has_value());
    }
}

}  // namespace

TEST_CASE("rotate replaces the token end to end and revokes the one hostkeeper made", "[rotate]") {
    World world;
    const std::string first = "tfe-first-" + std::to_string(world.server.port());
    FakeTfe tfe(world, "auth", {{"at-first", first}});
    world.start();
    const std::string host = world.host("auth");

    // The first token was not made by hostkeeper: it stays valid.
    store_token(world, host, first);
    Result rotated = world.cli({"rotate", host});
    INFO(rotated.out << rotated.err << world.daemon_log());
    REQUIRE(rotated.exit_code == 0);
    CHECK_THAT(rotated.out, Catch::Contains("rotated: new token at-new1") &&
                                Catch::Contains("not made by hostkeeper"));
    Json now = stored(world, host);
    CHECK(now.at("token_id") == "at-new1");
    CHECK(now.at("token") == tfe.token("at-new1").secret);
    CHECK(now.at("expires_at") == tfe.token("at-new1").expired_at);
    CHECK(now.at("expires_at").get<std::string>().size() == 20);
    CHECK_THAT(tfe.token("at-new1").description, Catch::StartsWith("hostkeeper on "));
    CHECK(tfe.valid(first));
    // The new token is what `check` and the helper use now.
    CHECK(world.ask({{"op", "check"}, {"host", host}}).at("result") == "valid");

    // Rotating again revokes at-new1, which hostkeeper made.
    const Json answer = world.ask({{"op", "rotate"}, {"host", host}});
    CHECK(answer.at("result") == "rotated");
    CHECK(answer.at("token_id") == "at-new2");
    CHECK(answer.at("revoked") == "at-new1");
    CHECK(tfe.token("at-new1").revoked);
    CHECK_FALSE(tfe.valid(tfe.token("at-new1").secret));
    now = stored(world, host);
    CHECK(now.at("token") == tfe.token("at-new2").secret);
    CHECK(now.at("token_id") == "at-new2");
    CHECK(world.ask({{"op", "check"}, {"host", host}}).at("result") == "valid");

    // No response carried a token back into the daemon's log.
    const std::string log = world.daemon_log();
    for (const char* id : {"at-new1", "at-new2"})
        CHECK(log.find(tfe.token(id).secret) == std::string::npos);
    CHECK(log.find(first) == std::string::npos);
    tokens_stayed_home(world);
    forget_token(world, host);
}

TEST_CASE("rotate that fails half way leaves the old token in place", "[rotate]") {
    World world;
    const std::string first = "tfe-first-" + std::to_string(world.server.port());
    FakeTfe tfe(world, "auth", {{"at-first", first}});
    world.start();
    const std::string host = world.host("auth");
    const Json old{
        {"token", first}, {"token_id", "at-first"}, {"expires_at", "2099-01-01T00:00:00Z"}};
    store_object(world, host, old);

    // The server cannot create a token: nothing changes.
    tfe.create_status = 500;
    Result failed = world.cli({"rotate", host});
    INFO(failed.out << failed.err);
    CHECK(failed.exit_code == 1);
    CHECK_THAT(failed.out, Catch::Contains("not rotated (create)") &&
                               Catch::Contains("HTTP status 500") &&
                               Catch::Contains("the token service is down"));
    CHECK(stored(world, host) == old);
    CHECK(tfe.count() == 1);
    CHECK(tfe.valid(first));

    // Created, stored, then refused on verification: the old object is put
    // back and the new token revoked.
    tfe.create_status = 201;
    tfe.refuse_created = true;
    const Json answer = world.ask({{"op", "rotate"}, {"host", host}});
    CHECK(answer.at("result") == "failed");
    CHECK(answer.at("step") == "verify");
    CHECK(answer.at("status") == 401);
    CHECK_THAT(answer.at("message").get<std::string>(),
               Catch::Contains("previous credentials are stored again") &&
                   Catch::Contains("the new token was revoked"));
    CHECK(stored(world, host) == old);
    CHECK(tfe.token("at-new1").revoked);
    CHECK(tfe.valid(first));
    CHECK_FALSE(tfe.token("at-first").revoked);
    tokens_stayed_home(world);
    forget_token(world, host);
}

TEST_CASE("rotate says why when there is nothing to rotate", "[rotate]") {
    World world;
    FakeTfe tfe(world, "auth", {{"at-first", "tfe-first"}});
    world.serve("other", hostkeeper::test::json_response(R"({"modules.v1":"/m/"})"));
    world.start();
    const std::string host = world.host("auth");
    const std::string other = world.host("other");

    // No token stored: nothing is sent.
    Result none = world.cli({"rotate", host});
    CHECK(none.exit_code == 3);
    CHECK_THAT(none.out, Catch::Contains("no token is stored for " + host) &&
                             Catch::Contains("terraform login " + host));
    CHECK(world.server.count("auth.localhost", "/api/v2/account/details") == 0);

    // A host without tfe.v2.
    store_token(world, other, "tok-plain-registry");
    Result plain = world.cli({"rotate", other});
    CHECK(plain.exit_code == 3);
    CHECK_THAT(plain.out,
               Catch::Contains("not rotated (service)") && Catch::Contains("offers no tfe.v2"));
    CHECK(stored(world, other).at("token") == "tok-plain-registry");

    // A token the host refuses: 7, as `check` says.
    store_token(world, host, "tfe-revoked-long-ago");
    Result refused = world.cli({"rotate", host});
    CHECK(refused.exit_code == 7);
    CHECK_THAT(refused.out, Catch::Contains("HTTP status 401") &&
                                Catch::Contains("run terraform login " + host));
    CHECK(tfe.count() == 1);
    forget_token(world, host);
    forget_token(world, other);
}

TEST_CASE("rotate = true rotates in the background before the token expires", "[rotate]") {
    World world;
    const std::string first = "tfe-first-" + std::to_string(world.server.port());
    FakeTfe tfe(world, "auth", {{"at-first", first}});
    const std::string host = world.host("auth");
    // A minute's lifetime: rotated when 6 s are left. The server grants
    // 9 s at most, so the second rotation comes 3 s after the first.
    tfe.max_lifetime_s = 9;
    world.start({}, "[hosts.\"" + host + "\"]\nrotate = true\nrotate_lifetime = \"1m\"\n");

    // The expiry of a token from terraform login is unknown: replaced at once.
    store_token(world, host, first);
    const auto token_id_becomes = [&](const std::string& id) {
        const auto give_up = std::chrono::steady_clock::now() + std::chrono::seconds(120);
        while (std::chrono::steady_clock::now() < give_up) {
            if (stored(world, host).value("token_id", "") == id) return true;
            std::this_thread::sleep_for(std::chrono::milliseconds(250));
        }
        return false;
    };
    INFO(world.daemon_log());
    REQUIRE(token_id_becomes("at-new1"));
    CHECK(tfe.valid(first));  // not made by hostkeeper: left alone

    // Then again shortly before at-new1 expires; at-new1 is revoked.
    REQUIRE(token_id_becomes("at-new2"));
    CHECK(tfe.token("at-new1").revoked);
    CHECK(stored(world, host).at("token") == tfe.token("at-new2").secret);
    const std::string log = world.daemon_log();
    CHECK_THAT(log, Catch::Contains("automatic rotation of " + host + ": new token at-new2"));
    CHECK(log.find(tfe.token("at-new2").secret) == std::string::npos);
    forget_token(world, host);
}

}  // namespace test_rotate
