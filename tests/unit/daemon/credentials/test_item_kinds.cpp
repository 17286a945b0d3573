// daemon/credentials/item_kinds: each kind described once, with the names
// users' keyrings and password stores already hold, byte for byte.
#include <catch2/catch.hpp>
#include <string>
#include <vector>

#include "daemon/credentials/item_kinds.hpp"

namespace test_item_kinds {

using hostkeeper::daemon::credentials::describe;
using hostkeeper::daemon::credentials::item_kinds;
using hostkeeper::daemon::credentials::ItemKind;

namespace {

std::vector<std::string> strings(const std::vector<const char*>& names) {
    return {names.begin(), names.end()};
}

}  // namespace

TEST_CASE("item kinds: every kind once, in ItemKind's order", "[daemon][credentials]") {
    REQUIRE(item_kinds().size() == 3);
    CHECK(item_kinds()[0].kind == ItemKind::terraform);
    CHECK(item_kinds()[1].kind == ItemKind::docker);
    CHECK(item_kinds()[2].kind == ItemKind::git);
    for (const auto& description : item_kinds()) CHECK(&describe(description.kind) == &description);
}

TEST_CASE("item kinds: the Secret Service's schemas, attributes and labels",
          "[daemon][credentials][libsecret]") {
    const auto& terraform = describe(ItemKind::terraform).secret_service;
    CHECK(std::string(terraform.schema_name) == "io.hostkeeper.Credentials");
    CHECK(strings(terraform.schema_attributes) == std::vector<std::string>{"host"});
    CHECK(std::string(terraform.key_attribute) == "host");
    CHECK(terraform.username_attribute == nullptr);
    CHECK(std::string(terraform.label_prefix) == "hostkeeper: ");

    const auto& docker = describe(ItemKind::docker).secret_service;
    CHECK(std::string(docker.schema_name) == "io.hostkeeper.DockerCredentials");
    CHECK(strings(docker.schema_attributes) == std::vector<std::string>{"server", "username"});
    CHECK(std::string(docker.key_attribute) == "server");
    CHECK(std::string(docker.username_attribute) == "username");
    CHECK(std::string(docker.label_prefix) == "hostkeeper docker: ");

    const auto& git = describe(ItemKind::git).secret_service;
    CHECK(std::string(git.schema_name) == "io.hostkeeper.GitCredentials");
    CHECK(strings(git.schema_attributes) ==
          std::vector<std::string>{"url", "protocol", "host", "path", "username"});
    CHECK(std::string(git.key_attribute) == "url");
    CHECK(git.username_attribute == nullptr);
    CHECK(std::string(git.label_prefix) == "hostkeeper git: ");
    const std::string url = "https://alice@gitlab.example.com/group/net.git";
    REQUIRE(git.more_attributes != nullptr);
    const auto more = git.more_attributes(url);
    REQUIRE(more.size() == 4);
    CHECK((std::string(more[0].first) == "protocol" && more[0].second == "https"));
    CHECK((std::string(more[1].first) == "host" && more[1].second == "gitlab.example.com"));
    CHECK((std::string(more[2].first) == "path" && more[2].second == "group/net.git"));
    CHECK((std::string(more[3].first) == "username" && more[3].second == "alice"));
    REQUIRE(git.shown_key != nullptr);
    CHECK(git.shown_key(url) == "https://gitlab.example.com/group/net.git");
}

TEST_CASE("item kinds: pass's folders, and what migrate reports", "[daemon][credentials][pass]") {
    CHECK(describe(ItemKind::terraform).pass.folder.empty());
    CHECK_FALSE(describe(ItemKind::terraform).pass.encoded);
    CHECK(describe(ItemKind::docker).pass.folder == "docker");
    CHECK(describe(ItemKind::docker).pass.username_inside);
    CHECK(describe(ItemKind::git).pass.folder == "git");
    CHECK_FALSE(describe(ItemKind::git).pass.username_inside);

    const auto reported = [](ItemKind kind) {
        const auto& m = describe(kind).migration;
        return std::vector<std::string>{m.what, m.many, m.reply_moved, m.reply_failed};
    };
    CHECK(reported(ItemKind::terraform) ==
          std::vector<std::string>{"host", "hosts", "migrated", "host"});
    CHECK(reported(ItemKind::docker) ==
          std::vector<std::string>{"Docker server", "Docker servers", "docker_migrated", "server"});
    CHECK(reported(ItemKind::git) ==
          std::vector<std::string>{"git item", "git items", "git_migrated", "url"});
}

}  // namespace test_item_kinds
