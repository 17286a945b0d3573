// daemon/backends/migration: every host moves, or stays as it was.
#include <catch2/catch.hpp>

#include "daemon/backends/migration.hpp"
#include "memory_keyring.hpp"

using namespace hostkeeper;
using daemon::backends::migrate;

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
    CHECK(result.migrated == std::vector<std::string>{"a.example", "b.example:8443", "c.example"});
    CHECK(from.hosts().empty());
    CHECK(to.text("a.example") == R"({"token":"ta"})");
    CHECK(to.text("b.example:8443") == R"({"token":"tb","extra":1})");
    CHECK(to.text("c.example") == R"({"token":"bare-token"})");
}

TEST_CASE("a host the target cannot store stays in the source, and only it", "[daemon][backends]") {
    test::MemoryKeyring from("pass");
    test::MemoryKeyring to("secret-service");
    from.put("a.example", R"({"token":"ta"})");
    from.put("b.example", R"({"token":"tb"})");
    to.fail_store_of("b.example");
    const auto result = migrate(from, to);
    CHECK(result.migrated == std::vector<std::string>{"a.example"});
    REQUIRE(result.failed.size() == 1);
    CHECK(result.failed[0].host == "b.example");
    CHECK(result.failed[0].code == proto::ErrorCode::keyring_error);
    CHECK(from.text("b.example") == R"({"token":"tb"})");
    CHECK_FALSE(to.has("b.example"));
    CHECK_FALSE(from.has("a.example"));
    CHECK(to.text("a.example") == R"({"token":"ta"})");
}

TEST_CASE("what reads back different is taken out of the target again", "[daemon][backends]") {
    test::MemoryKeyring from("pass");
    test::MemoryKeyring to("secret-service");
    from.put("a.example", R"({"token":"ta"})");
    to.garble_lookup_of("a.example");
    const auto result = migrate(from, to);
    REQUIRE(result.failed.size() == 1);
    CHECK(result.failed[0].message.find("differ") != std::string::npos);
    CHECK(from.text("a.example") == R"({"token":"ta"})");
    CHECK_FALSE(to.has("a.example"));
}

TEST_CASE("a host the target already holds: the same moves, different ones are both kept",
          "[daemon][backends]") {
    test::MemoryKeyring from("pass");
    test::MemoryKeyring to("secret-service");
    from.put("same.example", R"({"token":"t"})");
    to.put("same.example", R"({"token":"t"})");
    from.put("other.example", R"({"token":"mine"})");
    to.put("other.example", R"({"token":"theirs"})");
    const auto result = migrate(from, to);
    CHECK(result.migrated == std::vector<std::string>{"same.example"});
    REQUIRE(result.failed.size() == 1);
    CHECK(result.failed[0].host == "other.example");
    CHECK(result.failed[0].message.find("already holds other credentials") != std::string::npos);
    CHECK(from.text("other.example") == R"({"token":"mine"})");
    CHECK(to.text("other.example") == R"({"token":"theirs"})");
    CHECK_FALSE(from.has("same.example"));
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
