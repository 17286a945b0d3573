// hostkeeper import against the real keyring: tokens move from
// credentials.tfrc.json into the keyring, verified, and only then out of the
// file; a host that fails stays; nothing is ever lost or printed.
#include <catch2/catch.hpp>
#include <nlohmann/json.hpp>

#include "user_home.hpp"

namespace test_import {

using namespace hostkeeper::it;
namespace fs = std::filesystem;
using nlohmann::ordered_json;

namespace {

fs::path credentials_file(const UserHome& u) {
    return u.home / ".terraform.d" / "credentials.tfrc.json";
}

void no_token_printed(const Result& r, const std::vector<std::string>& tokens) {
    for (const auto& token : tokens) {
        CHECK_THAT(r.out, !Catch::Contains(token));
        CHECK_THAT(r.err, !Catch::Contains(token));
    }
}

}  // namespace

TEST_CASE(
    "import moves several hosts into the keyring and keeps the file's other content, mode 0600",
    "[import]") {
    UserHome u;
    const fs::path file = credentials_file(u);
    u.write(file, R"({
  "credentials": {
    "app.terraform.io": {"token": "tok-app-1"},
    "Registry.Example.COM": {"token": "tok-reg-2", "org": "acme"},
    "tfe.corp.example:8443": {"token": "tok-tfe-3"}
  },
  "comment": "kept by import"
})",
            0644);
    const Result imported = u.hostkeeper({"import"});
    INFO(imported.out << imported.err);
    REQUIRE(imported.exit_code == 0);
    no_token_printed(imported, {"tok-app-1", "tok-reg-2", "tok-tfe-3"});
    CHECK_THAT(imported.out,
               Catch::Contains("app.terraform.io: stored in the keyring and read back"));
    CHECK_THAT(imported.out, Catch::Contains("(as registry.example.com)"));

    CHECK(u.helper({"get", "app.terraform.io"}).out == "{\"token\":\"tok-app-1\"}\n");
    CHECK(u.helper({"get", "registry.example.com"}).out ==
          "{\"token\":\"tok-reg-2\",\"org\":\"acme\"}\n");
    CHECK(u.helper({"get", "tfe.corp.example:8443"}).out == "{\"token\":\"tok-tfe-3\"}\n");

    const auto rest = ordered_json::parse(read_file(file));
    CHECK(rest["credentials"] == ordered_json::object());
    CHECK(rest["comment"] == "kept by import");
    CHECK(mode_of(file) == 0600);
}

TEST_CASE("import keeps a host that fails in the file, says why and exits 1", "[import]") {
    UserHome u;
    const fs::path file = credentials_file(u);
    u.write(file, R"({"credentials": {
  "good.example.com": {"token": "tok-good"},
  "under_score.example.com": {"token": "tok-badname"},
  "notoken.example.com": {"token": 42}
}})");
    const Result imported = u.hostkeeper({"import"});
    CHECK(imported.exit_code == 1);
    no_token_printed(imported, {"tok-good", "tok-badname"});
    CHECK_THAT(imported.err, Catch::Contains("under_score.example.com: not imported, it stays in " +
                                             file.string()));
    CHECK_THAT(imported.err, Catch::Contains("notoken.example.com: not imported"));
    CHECK_THAT(imported.err, Catch::Contains("no token was lost"));

    const auto rest = ordered_json::parse(read_file(file));
    CHECK(rest["credentials"].size() == 2);
    CHECK(rest["credentials"]["under_score.example.com"]["token"] == "tok-badname");
    CHECK(rest["credentials"]["notoken.example.com"]["token"] == 42);
    CHECK_FALSE(rest["credentials"].contains("good.example.com"));
    CHECK(u.helper({"get", "good.example.com"}).out == "{\"token\":\"tok-good\"}\n");
}

TEST_CASE("import removes a file that holds nothing else; --keep-file leaves it", "[import]") {
    UserHome u;
    const fs::path file = credentials_file(u);
    const std::string text = R"({"credentials":{"only.example.com":{"token":"tok-only"}}})";
    u.write(file, text);
    const Result kept = u.hostkeeper({"import", "--keep-file"});
    CHECK(kept.exit_code == 0);
    CHECK(read_file(file) == text);
    CHECK(u.helper({"get", "only.example.com"}).out == "{\"token\":\"tok-only\"}\n");

    const Result moved = u.hostkeeper({"import"});
    CHECK(moved.exit_code == 0);
    CHECK_FALSE(fs::exists(file));
    CHECK_THAT(moved.out, Catch::Contains("removed (nothing was left in it)"));
}

TEST_CASE("import refuses a malformed credentials.tfrc.json and leaves it untouched", "[import]") {
    UserHome u;
    const fs::path file = credentials_file(u);
    const std::string text =
        "{\"credentials\": {\"x.example.com\": {\"token\": \"tok-secret-part\"";
    u.write(file, text, 0644);
    const Result r = u.hostkeeper({"import"});
    CHECK(r.exit_code == 1);
    CHECK_THAT(r.err, Catch::Contains("is not valid JSON"));
    no_token_printed(r, {"tok-secret-part"});
    CHECK(read_file(file) == text);
    CHECK(mode_of(file) == 0644);

    u.write(file, R"({"credentials": ["not", "an", "object"]})");
    const Result wrong = u.hostkeeper({"import"});
    CHECK(wrong.exit_code == 1);
    CHECK_THAT(wrong.err, Catch::Contains("is not a credentials file"));
}

TEST_CASE(
    "import reports credentials blocks in hand-written files with file and line, and edits none",
    "[import]") {
    UserHome u;
    const fs::path rc = u.home / ".terraformrc";
    const std::string text =
        "# mine\ncredentials \"hand.example.com\" {\n  token = \"tok-hand\"\n}\n";
    u.write(rc, text);
    const Result r = u.hostkeeper({"import"});
    CHECK(r.exit_code == 0);
    CHECK_THAT(r.out, Catch::Contains(rc.string() +
                                      ":2: credentials \"hand.example.com\" block: not edited"));
    no_token_printed(r, {"tok-hand"});
    CHECK(read_file(rc) == text);
}

TEST_CASE("import into a locked keyring fails for every host and loses nothing",
          "[import-locked]") {
    UserHome u;
    const fs::path file = credentials_file(u);
    const std::string text =
        R"({"credentials":{"a.example.com":{"token":"tok-a"},"b.example.com":{"token":"tok-b"}}})";
    u.write(file, text);
    REQUIRE(
        run({"/usr/bin/dbus-send", "--session", "--print-reply", "--dest=org.freedesktop.secrets",
             "/org/freedesktop/secrets", "org.freedesktop.Secret.Service.Lock",
             "array:objpath:/org/freedesktop/secrets/collection/login"})
            .exit_code == 0);
    const Result r = u.hostkeeper({"import"});
    CHECK(r.exit_code == 1);
    CHECK_THAT(r.err, Catch::Contains("a.example.com: not imported"));
    CHECK_THAT(r.err, Catch::Contains("locked"));
    no_token_printed(r, {"tok-a", "tok-b"});
    CHECK(read_file(file) == text);

    // And doctor says what to do about it.
    const Result doctor = u.hostkeeper({"doctor"});
    CHECK(doctor.exit_code == 1);
    CHECK_THAT(doctor.out, Catch::Contains("fix: unlock the keyring"));
}

TEST_CASE("import without a reachable daemon stops at once and changes nothing", "[import]") {
    UserHome u;
    const fs::path file = credentials_file(u);
    const std::string text = R"({"credentials":{"a.example.com":{"token":"tok-a"}}})";
    u.write(file, text);
    const fs::path open_dir = u.use_unsafe_socket_directory();
    const Result r = u.hostkeeper({"import"});
    CHECK(r.exit_code == 4);
    CHECK_THAT(r.err, Catch::Contains(open_dir.string()));
    CHECK(read_file(file) == text);
}

TEST_CASE("import rewrites a symlinked credentials.tfrc.json's target and keeps the link",
          "[import]") {
    UserHome u;
    const fs::path target = u.root / "dotfiles" / "terraform-credentials.json";
    u.write(target, R"({"credentials":{"linked.example.com":{"token":"tok-linked"}}})");
    const fs::path link = credentials_file(u);
    fs::create_directories(link.parent_path());
    fs::create_symlink(target, link);

    const Result imported = u.hostkeeper({"import"});
    INFO(imported.out << imported.err);
    REQUIRE(imported.exit_code == 0);
    CHECK(u.helper({"get", "linked.example.com"}).out == "{\"token\":\"tok-linked\"}\n");
    // Removing the link would leave the token in its target.
    REQUIRE(fs::is_symlink(link));
    CHECK(fs::read_symlink(link) == target);
    const std::string rest = read_file(target);
    CHECK_THAT(rest, !Catch::Contains("tok-linked"));
    CHECK(ordered_json::parse(rest)["credentials"] == ordered_json::object());
    CHECK(mode_of(target) == 0600);
}

TEST_CASE("import reads each host back from the keyring, not from the daemon's cache", "[import]") {
    UserHome u;
    const fs::path file = credentials_file(u);
    u.write(file, R"({"credentials":{"one.example.com":{"token":"tok-one"},
                      "two.example.com":{"token":"tok-two"}}})");
    REQUIRE(u.hostkeeper({"start"}).exit_code == 0);
    const auto lookups = [&u] {
        const Result status = u.hostkeeper({"status", "--json"});
        REQUIRE(status.exit_code == 0);
        return ordered_json::parse(status.out)["credentials"]["keyring_lookups"].get<long long>();
    };
    const long long before = lookups();
    const Result imported = u.hostkeeper({"import"});
    INFO(imported.out << imported.err);
    REQUIRE(imported.exit_code == 0);
    // Two per host: whether it is there already (to take back an import
    // that fails midway), and the read back after storing it.
    CHECK(lookups() == before + 4);
    CHECK_FALSE(fs::exists(file));
}

TEST_CASE("import refuses two spellings of one host with different tokens, moves equal ones once",
          "[import]") {
    UserHome u;
    const fs::path file = credentials_file(u);
    u.write(file, R"({"credentials":{
  "tfe.example.com": {"token": "tok-plain"},
  "TFE.example.com:443": {"token": "tok-port"},
  "other.example.com": {"token": "tok-other"}
}})");
    const Result conflict = u.hostkeeper({"import"});
    INFO(conflict.out << conflict.err);
    CHECK(conflict.exit_code == 1);
    no_token_printed(conflict, {"tok-plain", "tok-port", "tok-other"});
    CHECK_THAT(conflict.err, Catch::Contains("tfe.example.com: not imported"));
    CHECK_THAT(conflict.err, Catch::Contains("TFE.example.com:443: not imported"));
    CHECK_THAT(conflict.err, Catch::Contains("different credentials for tfe.example.com"));
    const auto rest = ordered_json::parse(read_file(file));
    CHECK(rest["credentials"].size() == 2);
    CHECK(rest["credentials"]["tfe.example.com"]["token"] == "tok-plain");
    CHECK(rest["credentials"]["TFE.example.com:443"]["token"] == "tok-port");
    CHECK(u.helper({"get", "other.example.com"}).out == "{\"token\":\"tok-other\"}\n");
    CHECK(u.helper({"get", "tfe.example.com"}).out == "{}\n");  // neither was stored

    u.write(file, R"({"credentials":{
  "tfe.example.com": {"token": "tok-same"},
  "TFE.example.com:443": {"token": "tok-same"}
}})");
    const Result same = u.hostkeeper({"import"});
    INFO(same.out << same.err);
    CHECK(same.exit_code == 0);
    CHECK(u.helper({"get", "tfe.example.com"}).out == "{\"token\":\"tok-same\"}\n");
    CHECK_FALSE(fs::exists(file));
}

}  // namespace test_import
