// git_get, git_store and git_erase behind a real socket, with an in-memory
// keyring: every rule of PROTOCOL.md "git credentials" (the real keyrings
// are the integration tests').
#include <boost/asio/post.hpp>
#include <catch2/catch.hpp>
#include <future>
#include <string>

#include "dispatcher_fixture.hpp"
#include "proto/messages.hpp"
#include "socket_fixture.hpp"

namespace test_git_requests {

using namespace hostkeeper;
using daemon::credentials::ItemKind;
using proto::Json;

namespace {

using Fixture = test::DispatcherFixture;

Json op(proto::Op which, const Json& fields) {
    Json r = proto::make_request(which);
    r["protocol"] = "https";
    for (const auto& [k, v] : fields.items()) r[k] = v;
    return r;
}

Json get(Fixture& f, const Json& fields) {
    return f.request(op(proto::Op::git_get, fields));
}

void store(Fixture& f, const Json& fields) {
    const Json answer = f.request(op(proto::Op::git_store, fields));
    CAPTURE(answer.dump());
    REQUIRE(answer.at("stored") == true);
}

// Runs `fn` on the daemon's event loop, where keyring events arrive, and
// waits for it.
template <class F>
void on_loop(Fixture& f, F fn) {
    std::promise<void> done;
    boost::asio::post(f.io, [&] {
        fn();
        done.set_value();
    });
    done.get_future().wait();
}

std::string password_of(const Json& answer) {
    CAPTURE(answer.dump());
    REQUIRE(answer.at("found") == true);
    return answer.at("password").get<std::string>();
}

}  // namespace

TEST_CASE("git_get: a host's Terraform token as oauth2, or its git_username",
          "[daemon][items][git]") {
    Fixture f;
    f.keyring.put("gitlab.example", R"({"token":"glpat-tf"})");
    f.keyring.put("custom.example", R"({"token":"custom-tf"})");
    CHECK(get(f, {{"host", "GitLab.Example:443"}, {"path", "group/net.git"}}).dump() ==
          R"({"v":1,"ok":true,"found":true,"source":"terraform","username":"oauth2",)"
          R"("password":"glpat-tf"})");
    CHECK(get(f, {{"host", "gitlab.example"}, {"username", "oauth2"}}).at("password") ==
          "glpat-tf");
    // A request naming another username is not answered with the token.
    CHECK(get(f, {{"host", "gitlab.example"}, {"username", "alice"}}).dump() ==
          R"({"v":1,"ok":true,"found":false})");
    const Json custom = get(f, {{"host", "custom.example"}});
    CHECK(custom.at("username") == "deploy");
    CHECK(custom.at("password") == "custom-tf");
    CHECK(get(f, {{"host", "custom.example"}, {"username", "oauth2"}}).at("found") == false);
    // Nothing stored: found false. An item without a token is the error
    // `get` answers for it.
    CHECK(get(f, {{"host", "nothing.example"}}).at("found") == false);
    f.keyring.put("tokenless.example", R"({"user":"x"})");
    const Json tokenless = get(f, {{"host", "tokenless.example"}});
    CHECK(test::error_code_of(tokenless) ==
          test::error_code_of(
              f.request(proto::Json{{"v", 1}, {"op", "get"}, {"host", "tokenless.example"}})));
}

TEST_CASE("git_store then git_get: the git item first, with its expiry and refresh token",
          "[daemon][items][git]") {
    Fixture f;
    f.keyring.put("gitlab.example", R"({"token":"glpat-tf"})");
    store(f, {{"host", "gitlab.example"},
              {"username", "alice"},
              {"password", "typed"},
              {"password_expiry_utc", 4102444800U},
              {"oauth_refresh_token", "refresh-me"}});
    CHECK(get(f, {{"host", "gitlab.example"}}).dump() ==
          R"({"v":1,"ok":true,"found":true,"source":"git","username":"alice","password":"typed",)"
          R"("password_expiry_utc":4102444800,"oauth_refresh_token":"refresh-me"})");
    CHECK(get(f, {{"host", "gitlab.example"}, {"username", "alice"}}).at("source") == "git");
    // The token still answers for its own username.
    CHECK(get(f, {{"host", "gitlab.example"}, {"username", "oauth2"}}).at("source") == "terraform");
    CHECK(f.keyring.text(ItemKind::git, "https://alice@gitlab.example") ==
          R"({"password":"typed","password_expiry_utc":4102444800,)"
          R"("oauth_refresh_token":"refresh-me"})");
    // An expiry as git writes it (a decimal string) is taken too.
    store(f, {{"host", "b.example"},
              {"username", "u"},
              {"password", "p"},
              {"password_expiry_utc", "4102444800"}});
    CHECK(get(f, {{"host", "b.example"}}).at("password_expiry_utc") == 4102444800U);
}

TEST_CASE("git_store keeps an empty username and password, as a single-sign-on credential",
          "[daemon][items][git]") {
    Fixture f;
    store(f, {{"host", "sso.example"}, {"username", ""}, {"password", ""}});
    CHECK(f.keyring.text(ItemKind::git, "https://sso.example") == R"({"password":""})");
    CHECK(get(f, {{"host", "sso.example"}}).dump() ==
          R"({"v":1,"ok":true,"found":true,"source":"git","username":"","password":""})");
    // A request naming a username is not answered by the item without one.
    CHECK(get(f, {{"host", "sso.example"}, {"username", "alice"}}).at("found") == false);
}

TEST_CASE(
    "git_get: paths are matched exactly, an item without one matches every path, the "
    "most specific wins",
    "[daemon][items][git]") {
    Fixture f;
    store(f, {{"host", "g.example"},
              {"path", "/group/a.git"},
              {"username", "u"},
              {"password", "for-a"}});
    store(f, {{"host", "g.example"}, {"username", "u2"}, {"password", "for-host"}});
    CHECK(password_of(get(f, {{"host", "g.example"}, {"path", "group/a.git"}})) == "for-a");
    CHECK(password_of(get(f, {{"host", "g.example"}, {"path", "/group/a.git"}})) == "for-a");
    CHECK(password_of(get(f, {{"host", "g.example"}, {"path", "group/b.git"}})) == "for-host");
    CHECK(password_of(get(f, {{"host", "g.example"}})) == "for-host");
    // The item with a path answers only its path, also for its username.
    CHECK(get(f, {{"host", "g.example"}, {"path", "group/b.git"}, {"username", "u"}}).at("found") ==
          false);
    // Another host, or the same host on another port, is another item.
    CHECK(get(f, {{"host", "g.example:8443"}}).at("found") == false);
}

TEST_CASE("git_get: among several matching items the most recently stored, per username",
          "[daemon][items][git]") {
    Fixture f;
    store(f, {{"host", "g.example"}, {"username", "old"}, {"password", "p-old"}});
    store(f, {{"host", "g.example"}, {"username", "new"}, {"password", "p-new"}});
    CHECK(get(f, {{"host", "g.example"}}).at("username") == "new");
    CHECK(password_of(get(f, {{"host", "g.example"}, {"username", "old"}})) == "p-old");
    // Storing again replaces the item (one per host, path and username) and makes it the newest.
    store(f, {{"host", "g.example"}, {"username", "old"}, {"password", "p-old-2"}});
    CHECK(password_of(get(f, {{"host", "g.example"}})) == "p-old-2");
    CHECK(f.keyring.count(ItemKind::git) == 2);
}

TEST_CASE("git_get: an expired item is never answered", "[daemon][items][git]") {
    Fixture f;
    f.keyring.put("g.example", R"({"token":"tf"})");
    store(f, {{"host", "g.example"},
              {"username", "oauth2"},
              {"password", "old"},
              {"password_expiry_utc", 1000}});
    // The expired item is passed over: the Terraform token answers.
    CHECK(get(f, {{"host", "g.example"}}).at("source") == "terraform");
    store(f, {{"host", "h.example"}, {"username", "u"}, {"password", "valid"}});
    store(f, {{"host", "h.example"},
              {"username", "v"},
              {"password", "expired"},
              {"password_expiry_utc", 1}});
    CHECK(password_of(get(f, {{"host", "h.example"}})) == "valid");
}

TEST_CASE("git_store: what our own get answered from the Terraform token is not kept again",
          "[daemon][items][git]") {
    Fixture f;
    f.keyring.put("g.example", R"({"token":"tf"})");
    f.keyring.put("custom.example", R"({"token":"ctf"})");
    const Json skipped = f.request(
        op(proto::Op::git_store,
           {{"host", "g.example"}, {"path", "x.git"}, {"username", "oauth2"}, {"password", "tf"}}));
    CHECK(skipped.dump() == R"({"v":1,"ok":true,"stored":false,"reason":"terraform_token"})");
    CHECK(f.request(op(proto::Op::git_store,
                       {{"host", "custom.example"}, {"username", "deploy"}, {"password", "ctf"}}))
              .at("stored") == false);
    CHECK(f.keyring.count(ItemKind::git) == 0);
    // Another password, or the token under another username, is kept.
    store(f, {{"host", "g.example"}, {"username", "oauth2"}, {"password", "other"}});
    store(f, {{"host", "g.example"}, {"username", "alice"}, {"password", "tf"}});
    CHECK(f.keyring.count(ItemKind::git) == 2);
    CHECK(f.keyring.text("g.example") == R"({"token":"tf"})");
    // A Terraform item without a token holds nothing to compare: the credential is kept.
    f.keyring.put("tokenless.example", R"({"user":"x"})");
    store(f, {{"host", "tokenless.example"}, {"username", "oauth2"}, {"password", "p"}});
}

TEST_CASE("git_erase: only git items, by path, username and password; never a Terraform token",
          "[daemon][items][git]") {
    Fixture f;
    f.keyring.put("g.example", R"({"token":"tf"})");
    store(f, {{"host", "g.example"}, {"username", "a"}, {"password", "pa"}});
    store(f, {{"host", "g.example"}, {"username", "b"}, {"password", "pb"}});
    store(f, {{"host", "g.example"}, {"path", "r.git"}, {"username", "a"}, {"password", "pr"}});
    const auto erase = [&](const Json& fields) {
        return f.request(op(proto::Op::git_erase, fields)).at("erased").get<int>();
    };
    // What git sends after the token was refused: nothing of ours matches it.
    CHECK(erase({{"host", "g.example"}, {"username", "oauth2"}, {"password", "tf"}}) == 0);
    CHECK(f.keyring.text("g.example") == R"({"token":"tf"})");
    CHECK(erase({{"host", "g.example"}, {"username", "a"}, {"password", "wrong"}}) == 0);
    // A request without a path matches only the items without one.
    CHECK(erase({{"host", "g.example"}, {"username", "a"}, {"password", "pa"}}) == 1);
    CHECK(f.keyring.count(ItemKind::git) == 2);
    CHECK(erase({{"host", "g.example"}, {"path", "r.git"}}) == 1);
    CHECK(erase({{"host", "g.example"}}) == 1);
    CHECK(erase({{"host", "g.example"}}) == 0);
    CHECK(f.keyring.count(ItemKind::git) == 0);
    CHECK(f.keyring.text("g.example") == R"({"token":"tf"})");
    CHECK(get(f, {{"host", "g.example"}}).at("source") == "terraform");
}

TEST_CASE("git requests: http and bad fields are refused with a clear error, nothing changes",
          "[daemon][items][git]") {
    Fixture f;
    f.keyring.put("g.example", R"({"token":"tf"})");
    const auto refused = [&](proto::Op which, const Json& fields, const std::string& code,
                             const std::string& words) {
        const Json answer = f.request(op(which, fields));
        CAPTURE(fields.dump());
        CHECK(test::error_code_of(answer) == code);
        CHECK_THAT(answer.at("error").at("message").get<std::string>(), Catch::Contains(words));
    };
    for (const proto::Op which : {proto::Op::git_get, proto::Op::git_store, proto::Op::git_erase}) {
        refused(which,
                {{"protocol", "http"}, {"host", "g.example"}, {"username", "u"}, {"password", "p"}},
                "bad_request", "only kept for https");
        refused(which, {{"protocol", nullptr}, {"host", "g.example"}}, "bad_request", "protocol");
        refused(which, {{"host", "bad host"}}, "bad_host", "");
        refused(which, {{"host", 5}}, "bad_request", "host");
        refused(which, {{"host", "g.example"}, {"path", "a\nb"}}, "bad_request",
                "control character");
        refused(which, {{"host", "g.example"}, {"path", std::string(1025, 'p')}}, "bad_request",
                "over 1024 bytes");
        refused(which, {{"host", "g.example"}, {"username", "a\tb"}}, "bad_request",
                "control character");
    }
    refused(proto::Op::git_store, {{"host", "g.example"}, {"password", "p"}}, "bad_request",
            "\"username\"");
    refused(proto::Op::git_store, {{"host", "g.example"}, {"username", "u"}}, "bad_request",
            "password");
    refused(proto::Op::git_store, {{"host", "g.example"}, {"username", "u"}, {"password", "a\nb"}},
            "bad_request", "line end");
    refused(
        proto::Op::git_store,
        {{"host", "g.example"}, {"username", "u"}, {"password", "p"}, {"password_expiry_utc", -5}},
        "bad_request", "password_expiry_utc");
    CHECK(f.keyring.count(ItemKind::git) == 0);
    CHECK(f.keyring.stores == 0);
}

TEST_CASE("git requests on a locked keyring are keyring_locked, never found:false",
          "[daemon][items][git]") {
    Fixture f;
    f.keyring.put("g.example", R"({"token":"tf"})");
    store(f, {{"host", "s.example"}, {"username", "u"}, {"password", "p"}});
    f.keyring.fail_lookups_with(proto::ErrorCode::keyring_locked);
    // A git item that cannot be read, and a Terraform token that cannot be.
    CHECK(test::error_code_of(get(f, {{"host", "s.example"}})) == "keyring_locked");
    CHECK(test::error_code_of(get(f, {{"host", "g.example"}})) == "keyring_locked");
    CHECK(test::error_code_of(get(f, {{"host", "none.example"}})) == "keyring_locked");
    CHECK(test::error_code_of(
              f.request(op(proto::Op::git_erase, {{"host", "s.example"}, {"password", "p"}}))) ==
          "keyring_locked");
    CHECK(f.keyring.count(ItemKind::git) == 1);
}

TEST_CASE("list names git items, never their passwords", "[daemon][items][git]") {
    Fixture f;
    store(f, {{"host", "g.example"},
              {"path", "grp/r.git"},
              {"username", "a@b"},
              {"password", "secret-pw"}});
    const Json answer = f.request(proto::make_request(proto::Op::list));
    REQUIRE(answer.at("git").size() == 1);
    const Json& item = answer.at("git")[0];
    CHECK(item.at("url") == "https://a%40b@g.example/grp/r.git");
    CHECK(item.at("protocol") == "https");
    CHECK(item.at("host") == "g.example");
    CHECK(item.at("path") == "grp/r.git");
    CHECK(item.at("username") == "a@b");
    CHECK(item.at("label") == "secret-service git: https://a%40b@g.example/grp/r.git");
    CHECK(item.at("stored").is_string());
    CHECK(answer.dump().find("secret-pw") == std::string::npos);
}

TEST_CASE("git_get: which hosts have git items is kept until the keyring changes",
          "[daemon][items][git]") {
    Fixture f;
    f.keyring.put("gitlab.example", R"({"token":"glpat-tf"})");
    f.keyring.put("other.example", R"({"token":"other-tf"})");
    CHECK(password_of(get(f, {{"host", "gitlab.example"}})) == "glpat-tf");
    const int listed = f.keyring.lists;
    // Known to have no git items: the Terraform token without a listing.
    CHECK(password_of(get(f, {{"host", "gitlab.example"}})) == "glpat-tf");
    CHECK(password_of(get(f, {{"host", "other.example"}})) == "other-tf");
    CHECK(f.keyring.lists == listed);

    // A git item stored through the daemon answers at once.
    store(f, {{"host", "gitlab.example"}, {"username", "alice"}, {"password", "typed"}});
    CHECK(password_of(get(f, {{"host", "gitlab.example"}})) == "typed");

    // One another program writes answers once the keyring says it changed.
    f.keyring.store({{ItemKind::git, "https://bob@other.example"},
                     "bob",
                     proto::Secret(std::string(R"({"password":"bobs"})"))});
    on_loop(f, [&] { f.credentials.keyring_changed(); });
    CHECK(password_of(get(f, {{"host", "other.example"}})) == "bobs");

    // While changes are not watched, every git_get lists the keyring.
    on_loop(f, [&] { f.credentials.keyring_watched(false); });
    const int unwatched = f.keyring.lists;
    CHECK(password_of(get(f, {{"host", "gitlab.example"}, {"username", "oauth2"}})) == "glpat-tf");
    CHECK(password_of(get(f, {{"host", "gitlab.example"}, {"username", "oauth2"}})) == "glpat-tf");
    CHECK(f.keyring.lists == unwatched + 2);
}

TEST_CASE("git_erase with a password also removes the item without a path that get answered",
          "[daemon][items][git]") {
    Fixture f;
    store(f, {{"host", "g.example"}, {"username", "alice"}, {"password", "old"}});
    // git asked with a path (credential.useHttpPath), got "old", was refused.
    CHECK(password_of(get(f, {{"host", "g.example"}, {"path", "grp/r.git"}})) == "old");
    // Without the password, only items of exactly that path go: none.
    CHECK(f.request(op(proto::Op::git_erase, {{"host", "g.example"}, {"path", "grp/r.git"}}))
              .at("erased") == 0);
    // Another password: nothing.
    CHECK(f.request(op(proto::Op::git_erase,
                       {{"host", "g.example"}, {"path", "grp/r.git"}, {"password", "other"}}))
              .at("erased") == 0);
    CHECK(f.keyring.count(ItemKind::git) == 1);
    CHECK(f.request(op(proto::Op::git_erase,
                       {{"host", "g.example"}, {"path", "grp/r.git"}, {"password", "old"}}))
              .at("erased") == 1);
    CHECK(f.keyring.count(ItemKind::git) == 0);
}

}  // namespace test_git_requests
