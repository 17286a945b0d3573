// hostkeeper unlock, status, doctor and migrate with the pass backend, in a
// world made here: a throw-away GNUPGHOME with a real key (its passphrase
// given by a stand-in pinentry that speaks the Assuan protocol), a real
// password store made by `pass init`, the real daemon started on demand;
// D-Bus removed from the environment where the test is about pass alone.
#include <unistd.h>

#include <catch2/catch.hpp>
#include <fstream>
#include <sstream>

#include "pass_home.hpp"
#include "user_home.hpp"

namespace test_pass_cli {

using namespace hostkeeper::it;
namespace fs = std::filesystem;

TEST_CASE(
    "unlock: get says locked and names hostkeeper unlock, unlock asks pinentry once, get works",
    "[pass-cli]") {
    PassHome u;
    u.init_store(true);
    u.insert("hostkeeper/locked.example", "{\"token\":\"tok-locked\"}\n");
    u.insert("hostkeeper/other.example_8443", "{\"token\":\"tok-other\"}\n");

    const Result locked = u.helper({"get", "locked.example"});
    INFO(locked.out << locked.err);
    CHECK(locked.exit_code == 1);
    CHECK(locked.out.empty());  // never {} for a host that has an entry
    CHECK_THAT(locked.err, Catch::Contains("hostkeeper unlock"));
    CHECK(u.pinentry_runs() == 0);  // the daemon never asks

    const Result unlock = u.hostkeeper({"unlock"});
    INFO(unlock.out << unlock.err);
    CHECK(unlock.exit_code == 0);
    CHECK_THAT(unlock.out, Catch::Contains("unlocked hostkeeper/locked.example.gpg"));
    CHECK_THAT(unlock.out, Catch::Contains("unlocked hostkeeper/other.example_8443.gpg"));
    CHECK_THAT(unlock.out, Catch::Contains("gpg-agent has the passphrase for all 2 entries"));
    // gpg's "encrypted with ... key" chatter is not repeated for each entry.
    CHECK_FALSE(Catch::contains(unlock.err, "encrypted with"));
    CHECK(u.pinentry_runs() == 1);  // cached after the first

    const Result got = u.helper({"get", "locked.example"});
    INFO(got.err);
    CHECK(got.exit_code == 0);
    CHECK(got.out == "{\"token\":\"tok-locked\"}\n");
    CHECK(u.helper({"get", "other.example:8443"}).out == "{\"token\":\"tok-other\"}\n");
}

TEST_CASE("unlock in a terminal: gpg-agent's pinentry is given that terminal, then get works",
          "[pass-cli]") {
    if (::access("/usr/bin/script", X_OK) != 0) {
        WARN("skipped: no /usr/bin/script (util-linux) to give hostkeeper unlock a terminal");
        return;
    }
    PassHome u;
    u.init_store(true);
    u.insert("hostkeeper/tty.example", "{\"token\":\"tok-tty\"}\n");
    REQUIRE(u.helper({"get", "tty.example"}).exit_code == 1);
    // script(1) runs it on a new pseudo-terminal, as in a user's shell.
    const Result r = u.sh("script -qec '" + bin("hostkeeper") + " unlock' /dev/null");
    INFO(r.out << r.err);
    CHECK(r.exit_code == 0);
    CHECK_THAT(r.out, Catch::Contains("unlocked hostkeeper/tty.example.gpg"));
    CHECK(u.pinentry_runs() == 1);
    std::ifstream options_log(u.root / "pinentry-tty.log");
    std::stringstream seen;
    seen << options_log.rdbuf();
    CHECK_THAT(seen.str(), Catch::Contains("OPTION ttyname=/dev/pts/"));
    CHECK(u.helper({"get", "tty.example"}).out == "{\"token\":\"tok-tty\"}\n");
}

TEST_CASE("unlock: an entry gpg cannot decrypt fails it (exit 1, named), none at all is a probe",
          "[pass-cli]") {
    PassHome u;
    u.init_store(false);
    const Result empty = u.hostkeeper({"unlock"});
    INFO(empty.out << empty.err);
    CHECK(empty.exit_code == 0);
    CHECK_THAT(empty.out, Catch::Contains("no hostkeeper entries yet; gpg-agent has the "
                                          "passphrase of the store's key"));
    u.insert("hostkeeper/good.example", "{\"token\":\"t\"}\n");
    u.write(u.store / "hostkeeper" / "broken.example.gpg", "not an OpenPGP message\n");
    const Result r = u.hostkeeper({"unlock"});
    INFO(r.out << r.err);
    CHECK(r.exit_code == 1);
    CHECK_THAT(r.out, Catch::Contains("FAILED   hostkeeper/broken.example.gpg (gpg exit status"));
    CHECK_THAT(r.out, Catch::Contains("unlocked hostkeeper/good.example.gpg"));
    CHECK_THAT(r.out, Catch::Contains("1 of 2 entries could not be decrypted"));
}

TEST_CASE("status and doctor: pass chosen automatically, why, what was tried, and its checks",
          "[pass-cli]") {
    PassHome u;
    const std::string fingerprint = u.init_store(true);
    u.insert("hostkeeper/doc.example", "{\"token\":\"t\"}\n");
    REQUIRE(u.hostkeeper({"start"}).exit_code == 0);

    const Result status = u.hostkeeper({"status"});
    INFO(status.out << status.err);
    CHECK(status.exit_code == 0);
    CHECK_THAT(status.out, Catch::Contains("keyring backend: pass (configured: auto): "));
    CHECK_THAT(status.out, Catch::Contains("password store: " + u.store.string() + " (writable)"));
    CHECK_THAT(status.out, Catch::Contains("  tried secret-service: not usable"));
    CHECK_THAT(status.out, Catch::Contains("  tried pass: usable"));

    // The passphrase is not cached: the decrypt check fails with the fix.
    const Result locked = u.hostkeeper({"doctor"});
    INFO(locked.out << locked.err);
    CHECK(locked.exit_code == 1);
    CHECK_THAT(locked.out, Catch::Contains("ok    keyring backend: pass (configured: auto)"));
    CHECK_THAT(locked.out, Catch::Contains("ok    gpg has a usable secret key for " + fingerprint +
                                           " (" + (u.store / ".gpg-id").string() + ")"));
    CHECK_THAT(locked.out, Catch::Contains("ok    gpg-agent answers"));
    CHECK_THAT(locked.out, Catch::Contains("ok    hostkeeperd can write to the password store " +
                                           u.store.string()));
    CHECK_THAT(locked.out, Catch::Contains("FAIL  hostkeeperd cannot decrypt the entry of "
                                           "doc.example without a passphrase"));
    CHECK_THAT(locked.out, Catch::Contains("fix: run hostkeeper unlock in a terminal"));
    CHECK(u.pinentry_runs() == 0);

    REQUIRE(u.hostkeeper({"unlock"}).exit_code == 0);
    const Result unlocked = u.hostkeeper({"doctor"});
    INFO(unlocked.out);
    CHECK_THAT(
        unlocked.out,
        Catch::Contains("ok    hostkeeperd decrypts the entry of doc.example without a prompt"));

    // A sub-folder's .gpg-id naming a key gpg does not have.
    u.write(u.store / "hostkeeper" / "team" / ".gpg-id", "0xDEADBEEFDEADBEEF\n");
    const Result missing = u.hostkeeper({"doctor"});
    CHECK_THAT(missing.out,
               Catch::Contains("FAIL  gpg has no secret key for 0xDEADBEEFDEADBEEF (" +
                               (u.store / "hostkeeper" / "team" / ".gpg-id").string() + ")"));
}

TEST_CASE("migrate: refused by the daemon: exit 1, nothing written to config.toml", "[pass-cli]") {
    PassHome u;
    u.init_store(false);
    u.insert("hostkeeper/stay.example", "{\"token\":\"t\"}\n");
    const Result same = u.hostkeeper({"migrate", "--to", "pass"});  // the backend in use
    INFO(same.out << same.err);
    CHECK(same.exit_code == 1);
    CHECK_THAT(same.err, Catch::Contains("hostkeeperd refused") &&
                             Catch::Contains("(bad_request); nothing moved"));
    const Result no_bus = u.hostkeeper({"migrate", "--to", "secret-service"});  // no D-Bus here
    INFO(no_bus.out << no_bus.err);
    CHECK(no_bus.exit_code == 1);
    CHECK_THAT(no_bus.err, Catch::Contains("(keyring_unavailable); nothing moved"));
    CHECK_FALSE(fs::exists(u.config / "hostkeeper" / "config.toml"));
    CHECK(u.helper({"get", "stay.example"}).out == "{\"token\":\"t\"}\n");
    CHECK(u.hostkeeper({"migrate", "--to", "gpg"}).exit_code == 2);  // not a backend
}

TEST_CASE(
    "migrate: Secret Service to pass: exit 0, config.toml keeps its lines and says pass, "
    "the next daemon uses it",
    "[pass-cli]") {
    PassHome u(true);
    u.init_store(false);
    u.write(u.config / "hostkeeper" / "config.toml",
            "# my daemon\nlog_level = \"info\"\n\n[keyring]\n# picked by hostkeeper\n", 0640);
    REQUIRE(u.helper({"store", "mig-a.example"}, "{\"token\":\"a\"}").exit_code == 0);
    REQUIRE(u.helper({"store", "mig-b.example:8443"}, "{\"token\":\"b\"}").exit_code == 0);
    REQUIRE_THAT(u.hostkeeper({"status"}).out,
                 Catch::Contains("keyring backend: secret-service (configured: auto)"));

    const Result r = u.hostkeeper({"migrate", "--to", "pass"});
    INFO(r.out << r.err);
    CHECK(r.exit_code == 0);
    CHECK_THAT(r.out, Catch::Contains("moved    mig-a.example"));
    CHECK_THAT(r.out, Catch::Contains("moved    mig-b.example:8443"));
    CHECK_THAT(r.out, Catch::Contains("2 item(s) moved from secret-service to pass\n"));
    CHECK(u.config_text() ==
          "# my daemon\nlog_level = \"info\"\n\n[keyring]\nbackend = "
          "\"pass\"\n# picked by hostkeeper\n");
    CHECK(mode_of(u.config / "hostkeeper" / "config.toml") == 0640);
    CHECK(u.sh("pass show hostkeeper/mig-a.example").out == "{\"token\":\"a\"}\n");

    REQUIRE(u.hostkeeper({"stop"}).exit_code == 0);
    CHECK(u.helper({"get", "mig-b.example:8443"}).out == "{\"token\":\"b\"}\n");
    CHECK_THAT(u.hostkeeper({"status"}).out,
               Catch::Contains("keyring backend: pass (configured: pass)"));
}

TEST_CASE("migrate: one host cannot be written: nothing moves, exit 1, FAILED names it",
          "[pass-cli]") {
    PassHome u(true);
    u.init_store(false);
    REQUIRE(u.helper({"store", "mix-ok.example"}, "{\"token\":\"ok\"}").exit_code == 0);
    REQUIRE(u.helper({"store", "mix-bad.example"}, "{\"token\":\"bad\"}").exit_code == 0);
    // A folder where its entry file belongs: encrypting there fails.
    fs::create_directories(u.store / "hostkeeper" / "mix-bad.example.gpg");

    const Result r = u.hostkeeper({"migrate", "--to", "pass"});
    INFO(r.out << r.err);
    CHECK(r.exit_code == 1);
    CHECK_THAT(r.out, Catch::Contains("FAILED   mix-bad.example: "));
    CHECK_THAT(r.out, Catch::Contains("nothing moved: 1 item(s) failed"));
    CHECK_THAT(r.out, Catch::Contains("hostkeeperd still uses secret-service"));
    CHECK_FALSE(fs::exists(u.config / "hostkeeper" / "config.toml"));
    // Both hosts as they were: served from the Secret Service, not in the store.
    CHECK(u.helper({"get", "mix-bad.example"}).out == "{\"token\":\"bad\"}\n");
    CHECK(u.helper({"get", "mix-ok.example"}).out == "{\"token\":\"ok\"}\n");
    CHECK_FALSE(fs::exists(u.store / "hostkeeper" / "mix-ok.example.gpg"));
    REQUIRE(u.helper({"forget", "mix-ok.example"}).exit_code == 0);
    CHECK_THAT(u.hostkeeper({"status"}).out,
               Catch::Contains("keyring backend: secret-service (configured: auto)"));
    REQUIRE(u.helper({"forget", "mix-bad.example"}).exit_code == 0);
}

namespace {

std::string bytes_of(const fs::path& path) {
    std::ifstream in(path, std::ios::binary);
    std::stringstream text;
    text << in.rdbuf();
    return text.str();
}

bool is_link(const fs::path& path) {
    return fs::is_symlink(fs::symlink_status(path));
}

}  // namespace

// A store synced with git may carry symbolic links. hostkeeper follows none:
// not to an entry, nor to hostkeeper/ itself.
TEST_CASE("links: get for a host whose entry links to another host's is refused, never its token",
          "[pass-cli]") {
    PassHome u;
    u.init_store(false);
    u.insert("hostkeeper/b.example", "{\"token\":\"tok-of-b\"}\n");
    fs::create_symlink("b.example.gpg", u.store / "hostkeeper" / "a.example.gpg");
    // pass itself would show B's entry for A.
    REQUIRE_THAT(u.sh("pass show hostkeeper/a.example").out, Catch::Contains("tok-of-b"));

    const Result got = u.helper({"get", "a.example"});
    INFO(got.out << got.err);
    CHECK(got.exit_code == 1);
    CHECK(got.out.find("tok-of-b") == std::string::npos);
    CHECK(got.err.find("tok-of-b") == std::string::npos);
    CHECK_THAT(got.err,
               Catch::Contains("hostkeeper/a.example") &&
                   Catch::Contains("is a symbolic link, which hostkeeper does not follow"));
    CHECK(u.helper({"get", "b.example"}).out == "{\"token\":\"tok-of-b\"}\n");
}

TEST_CASE("links: store and forget through an entry that links outside the store are refused",
          "[pass-cli]") {
    PassHome u;
    u.init_store(false);
    const fs::path outside = u.root / "outside.txt";
    const std::string precious = "not the store's\n";
    u.write(outside, precious);
    const fs::path entry = u.store / "hostkeeper" / "c.example.gpg";
    fs::create_directories(entry.parent_path());
    fs::create_symlink(outside, entry);

    const Result stored = u.helper({"store", "c.example"}, "{\"token\":\"new\"}");
    INFO(stored.out << stored.err);
    CHECK(stored.exit_code != 0);
    CHECK_THAT(stored.err,
               Catch::Contains("hostkeeper/c.example") && Catch::Contains("is a symbolic link"));
    CHECK(bytes_of(outside) == precious);
    CHECK(is_link(entry));

    const Result forgot = u.helper({"forget", "c.example"});
    INFO(forgot.out << forgot.err);
    CHECK(forgot.exit_code != 0);
    CHECK_THAT(forgot.err, Catch::Contains("is a symbolic link"));
    CHECK(bytes_of(outside) == precious);
    CHECK(is_link(entry));

    // The host next to it is written, read and forgotten as always.
    REQUIRE(u.helper({"store", "ok.example"}, "{\"token\":\"ok\"}").exit_code == 0);
    CHECK(mode_of(u.store / "hostkeeper" / "ok.example.gpg") == 0600);
    CHECK(u.sh("pass show hostkeeper/ok.example").out == "{\"token\":\"ok\"}\n");
    CHECK(u.helper({"forget", "ok.example"}).exit_code == 0);
    CHECK_FALSE(fs::exists(u.store / "hostkeeper" / "ok.example.gpg"));
}

TEST_CASE("links: a hostkeeper/ folder that links outside the store is refused, and not listed",
          "[pass-cli]") {
    PassHome u;
    u.init_store(false);
    u.insert("hostkeeper/in.example", "{\"token\":\"tok-in\"}\n");
    const fs::path elsewhere = u.root / "elsewhere";
    fs::rename(u.store / "hostkeeper", elsewhere);
    fs::create_symlink(elsewhere, u.store / "hostkeeper");

    const Result got = u.helper({"get", "in.example"});
    INFO(got.out << got.err);
    CHECK(got.exit_code == 1);
    CHECK(got.out.find("tok-in") == std::string::npos);
    CHECK_THAT(got.err, Catch::Contains("the folder " + (u.store / "hostkeeper").string() +
                                        " is a symbolic link, which hostkeeper does not follow"));
    const Result stored = u.helper({"store", "new.example"}, "{\"token\":\"n\"}");
    CHECK(stored.exit_code != 0);
    CHECK_FALSE(fs::exists(elsewhere / "new.example.gpg"));
    CHECK(u.helper({"forget", "in.example"}).exit_code != 0);
    CHECK(fs::is_regular_file(fs::symlink_status(elsewhere / "in.example.gpg")));
    const Result listed = u.hostkeeper({"list"});
    INFO(listed.out << listed.err);
    CHECK(listed.exit_code != 0);
    CHECK(listed.out.find("in.example") == std::string::npos);
    CHECK_THAT(listed.err, Catch::Contains("is a symbolic link"));
}

TEST_CASE("links: list leaves out entries that are links", "[pass-cli]") {
    PassHome u;
    u.init_store(false);
    u.insert("hostkeeper/real.example", "{\"token\":\"r\"}\n");
    fs::create_symlink("real.example.gpg", u.store / "hostkeeper" / "alias.example.gpg");
    const Result listed = u.hostkeeper({"list", "--json"});
    INFO(listed.out << listed.err);
    CHECK(listed.exit_code == 0);
    CHECK_THAT(listed.out, Catch::Contains("\"real.example\""));
    CHECK(listed.out.find("alias.example") == std::string::npos);
}

TEST_CASE("links: hostkeeper unlock decrypts no entry through a link", "[pass-cli]") {
    PassHome u;
    u.init_store(true);
    u.insert("hostkeeper/own.example", "{\"token\":\"t\"}\n");
    // Outside the store: what gpg cannot decrypt (it would fail unlock), and
    // a folder of such files behind a linked sub-folder.
    u.write(u.root / "not-openpgp.gpg", "not an OpenPGP message\n");
    fs::create_directories(u.root / "far");
    u.write(u.root / "far" / "x.gpg", "not an OpenPGP message either\n");
    fs::create_symlink(u.root / "not-openpgp.gpg", u.store / "hostkeeper" / "out.example.gpg");
    fs::create_symlink("own.example.gpg", u.store / "hostkeeper" / "alias.example.gpg");
    fs::create_symlink(u.root / "far", u.store / "hostkeeper" / "team");

    const Result r = u.hostkeeper({"unlock"});
    INFO(r.out << r.err);
    CHECK(r.exit_code == 0);
    CHECK_THAT(r.out, Catch::Contains("unlocked hostkeeper/own.example.gpg"));
    CHECK_THAT(r.out, Catch::Contains("gpg-agent has the passphrase for all 1 entries"));
    CHECK(r.out.find("out.example") == std::string::npos);
    CHECK(r.out.find("alias.example") == std::string::npos);
    CHECK(r.out.find("x.gpg") == std::string::npos);
    CHECK(u.pinentry_runs() == 1);

    // hostkeeper/ itself a link: nothing in it is decrypted.
    u.forget_passphrases();
    fs::rename(u.store / "hostkeeper", u.root / "moved");
    fs::create_symlink(u.root / "moved", u.store / "hostkeeper");
    const Result linked = u.hostkeeper({"unlock"});
    INFO(linked.out << linked.err);
    CHECK(linked.out.find("own.example") == std::string::npos);
    CHECK(u.pinentry_runs() == 1);  // no passphrase asked for an entry behind the link
}

TEST_CASE("the headless recipe: pass init, hostkeeper unlock, then import works the first time",
          "[pass-cli]") {
    PassHome u;
    u.init_store(true);  // a key with a passphrase, none cached
    const Result unlock = u.hostkeeper({"unlock"});
    INFO(unlock.out << unlock.err);
    CHECK(unlock.exit_code == 0);
    CHECK_THAT(unlock.out, Catch::Contains("gpg-agent has the passphrase of the store's key"));
    CHECK(u.pinentry_runs() == 1);  // asked by the probe, before any entry exists
    const fs::path file = u.home / ".terraform.d" / "credentials.tfrc.json";
    u.write(file, R"({"credentials": {"recipe.example": {"token": "tok-recipe"}}})", 0600);
    const Result imported = u.hostkeeper({"import"});
    INFO(imported.out << imported.err);
    CHECK(imported.exit_code == 0);
    CHECK_THAT(imported.out, Catch::Contains("recipe.example: stored"));
    CHECK(u.helper({"get", "recipe.example"}).out == "{\"token\":\"tok-recipe\"}\n");
    CHECK(u.pinentry_runs() == 1);  // nothing asked again
}

}  // namespace test_pass_cli
