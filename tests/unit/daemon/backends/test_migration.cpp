// daemon/backends/migration: every host moves, or stays as it was.
#include <catch2/catch.hpp>

#include "daemon/backends/migration.hpp"
#include "daemon/credentials/docker_items.hpp"
#include "daemon/credentials/git_items.hpp"
#include "daemon/credentials/terraform_items.hpp"
#include "memory_keyring.hpp"

namespace test_migration {

using namespace hostkeeper;
using daemon::backends::migrate;
using daemon::credentials::ItemKind;

namespace {

std::vector<std::string> hosts(test::MemoryKeyring& keyring) {
    return daemon::credentials::TerraformItems(keyring).hosts();
}

daemon::credentials::DockerItems docker(test::MemoryKeyring& keyring) {
    return daemon::credentials::DockerItems(keyring);
}

}  // namespace

TEST_CASE("migrate moves every host, read back and compared, then removed from the source",
          "[daemon][backends]") {
    test::MemoryKeyring from("secret-service");
    test::MemoryKeyring to("pass");
    from.put("a.example", R"({"token":"ta"})");
    from.put("b.example:8443", R"({ "token": "tb", "extra": 1 })");
    from.put("c.example", "bare-token");  // as a person may paste into secret-tool
    const auto result = migrate(from, to);
    CHECK(result.from == "secret-service");
    CHECK(result.to == "pass");
    CHECK(result.failed.empty());
    CHECK(result.switched);
    CHECK(result.moved(ItemKind::terraform) ==
          std::vector<std::string>{"a.example", "b.example:8443", "c.example"});
    CHECK(hosts(from).empty());
    CHECK(to.text("a.example") == R"({"token":"ta"})");
    CHECK(to.text("b.example:8443") == R"({"token":"tb","extra":1})");
    CHECK(to.text("c.example") == R"({"token":"bare-token"})");
}

TEST_CASE("one host the target cannot store: nothing moves, every copy is taken back",
          "[daemon][backends]") {
    test::MemoryKeyring from("pass");
    test::MemoryKeyring to("secret-service");
    from.put("a.example", R"({"token":"ta"})");
    from.put("b.example", R"({"token":"tb"})");
    from.put("c.example", R"({"token":"tc"})");
    to.fail_store_of("b.example");
    const auto result = migrate(from, to);
    CHECK(result.moved(ItemKind::terraform).empty());
    CHECK_FALSE(result.switched);
    REQUIRE(result.failed.size() == 1);
    CHECK(result.failed[0].kind == ItemKind::terraform);
    CHECK(result.failed[0].key == "b.example");
    CHECK(result.failed[0].code == proto::ErrorCode::keyring_error);
    // The source as it was; the target as it was (empty).
    CHECK(hosts(from) == std::vector<std::string>{"a.example", "b.example", "c.example"});
    CHECK(from.text("a.example") == R"({"token":"ta"})");
    CHECK(hosts(to).empty());
}

TEST_CASE("what reads back different fails the migration and is taken out again",
          "[daemon][backends]") {
    test::MemoryKeyring from("pass");
    test::MemoryKeyring to("secret-service");
    from.put("a.example", R"({"token":"ta"})");
    to.garble_lookup_of("a.example");
    const auto result = migrate(from, to);
    REQUIRE(result.failed.size() == 1);
    CHECK(result.failed[0].message.find("differ") != std::string::npos);
    CHECK_FALSE(result.switched);
    CHECK(from.text("a.example") == R"({"token":"ta"})");
    CHECK_FALSE(to.has("a.example"));
}

TEST_CASE("a host the target already holds: the same counts as copied, different ones fail",
          "[daemon][backends]") {
    test::MemoryKeyring from("pass");
    test::MemoryKeyring to("secret-service");
    from.put("same.example", R"({"token":"t"})");
    to.put("same.example", R"({"token":"t"})");
    SECTION("only the same one: it moves") {
        const auto result = migrate(from, to);
        CHECK(result.switched);
        CHECK(result.moved(ItemKind::terraform) == std::vector<std::string>{"same.example"});
        CHECK_FALSE(from.has("same.example"));
        CHECK(to.text("same.example") == R"({"token":"t"})");
    }
    SECTION("and a different one: nothing moves, both keep theirs") {
        from.put("other.example", R"({"token":"mine"})");
        to.put("other.example", R"({"token":"theirs"})");
        const auto result = migrate(from, to);
        CHECK_FALSE(result.switched);
        REQUIRE(result.failed.size() == 1);
        CHECK(result.failed[0].kind == ItemKind::terraform);
        CHECK(result.failed[0].key == "other.example");
        CHECK(result.failed[0].message.find("already holds other credentials") !=
              std::string::npos);
        CHECK(from.text("other.example") == R"({"token":"mine"})");
        CHECK(to.text("other.example") == R"({"token":"theirs"})");
        // What the target held before is not taken out by the roll-back.
        CHECK(from.has("same.example"));
        CHECK(to.text("same.example") == R"({"token":"t"})");
    }
}

TEST_CASE("a host that cannot be removed from the source after the copy is left in both",
          "[daemon][backends]") {
    test::MemoryKeyring from("pass");
    test::MemoryKeyring to("secret-service");
    from.put("a.example", R"({"token":"ta"})");
    from.fail_remove_of("a.example");
    const auto result = migrate(from, to);
    CHECK(result.switched);
    CHECK(result.moved(ItemKind::terraform) == std::vector<std::string>{"a.example"});
    REQUIRE(result.leftover.size() == 1);
    CHECK(result.leftover[0].kind == ItemKind::terraform);
    CHECK(result.leftover[0].key == "a.example");
    CHECK(from.has("a.example"));
    CHECK(to.text("a.example") == R"({"token":"ta"})");
}

TEST_CASE("a source that cannot be listed changes nothing", "[daemon][backends]") {
    test::MemoryKeyring from("pass");
    test::MemoryKeyring to("secret-service");
    from.put("a.example", R"({"token":"ta"})");
    from.fail_with(proto::ErrorCode::keyring_locked);
    CHECK_THROWS_AS(migrate(from, to), proto::Error);
    from.fail_with(std::nullopt);
    CHECK(from.has("a.example"));
    CHECK_FALSE(to.has("a.example"));
}

TEST_CASE("Docker credentials move with the hosts", "[daemon][backends][docker]") {
    test::MemoryKeyring from("secret-service");
    test::MemoryKeyring to("pass");
    from.put("a.example", R"({"token":"ta"})");
    docker(from).store({"reg.example:5000", "alice", proto::Secret(std::string_view("s1"))});
    docker(from).store(
        {"https://index.docker.io/v1/", "bob", proto::Secret(std::string_view("s2"))});
    const auto result = migrate(from, to);
    CHECK(result.switched);
    CHECK(result.moved(ItemKind::terraform) == std::vector<std::string>{"a.example"});
    CHECK(result.moved(ItemKind::docker) ==
          std::vector<std::string>{"https://index.docker.io/v1/", "reg.example:5000"});
    CHECK(docker(from).items().empty());
    const auto moved = docker(to).lookup("reg.example:5000");
    REQUIRE(moved);
    CHECK(moved->username == "alice");
    CHECK(moved->secret.view() == "s1");
}

TEST_CASE("a Docker server the target cannot store: nothing moves, hosts included",
          "[daemon][backends][docker]") {
    test::MemoryKeyring from("secret-service");
    test::MemoryKeyring to("pass");
    from.put("a.example", R"({"token":"ta"})");
    docker(from).store({"reg.example:5000", "alice", proto::Secret(std::string_view("s1"))});
    to.fail_store_of("reg.example:5000");
    const auto result = migrate(from, to);
    CHECK_FALSE(result.switched);
    REQUIRE(result.failed.size() == 1);
    CHECK(result.failed[0].kind == ItemKind::docker);
    CHECK(result.failed[0].key == "reg.example:5000");
    CHECK(hosts(to).empty());
    CHECK(docker(to).items().empty());
    CHECK(hosts(from) == std::vector<std::string>{"a.example"});
    CHECK(docker(from).items().size() == 1);
}

TEST_CASE("git items move with the hosts, expiry and refresh token included",
          "[daemon][backends][git]") {
    test::MemoryKeyring from("secret-service");
    test::MemoryKeyring to("pass");
    from.put("a.example", R"({"token":"ta"})");
    daemon::credentials::GitItems(from).store({{"g.example", "r.git", "alice"},
                                               proto::Secret(std::string_view("pw")),
                                               4102444800U,
                                               proto::Secret(std::string_view("refresh"))});
    const auto result = migrate(from, to);
    CHECK(result.switched);
    CHECK(result.moved(ItemKind::git) == std::vector<std::string>{"https://alice@g.example/r.git"});
    CHECK(daemon::credentials::GitItems(from).items().empty());
    const auto moved = daemon::credentials::GitItems(to).lookup({"g.example", "r.git", "alice"});
    REQUIRE(moved);
    CHECK(moved->password.view() == "pw");
    CHECK(moved->password_expiry_utc == 4102444800U);
    REQUIRE(moved->oauth_refresh_token);
    CHECK(moved->oauth_refresh_token->view() == "refresh");
}

TEST_CASE("a git item the target cannot store: nothing moves, and the failure names its URL",
          "[daemon][backends][git]") {
    test::MemoryKeyring from("secret-service");
    test::MemoryKeyring to("pass");
    from.put("a.example", R"({"token":"ta"})");
    daemon::credentials::GitItems(from).store({{"g.example", "", "bob"},
                                               proto::Secret(std::string_view("pw")),
                                               std::nullopt,
                                               std::nullopt});
    to.fail_store_of("https://bob@g.example");
    const auto result = migrate(from, to);
    CHECK_FALSE(result.switched);
    REQUIRE(result.failed.size() == 1);
    CHECK(result.failed[0].kind == ItemKind::git);
    CHECK(result.failed[0].key == "https://bob@g.example");
    CHECK(hosts(to).empty());
    CHECK(daemon::credentials::GitItems(to).items().empty());
    CHECK(daemon::credentials::GitItems(from).items().size() == 1);
}

}  // namespace test_migration
