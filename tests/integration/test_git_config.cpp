// hostkeeper setup --git and doctor's git check against the real git: the
// value added after the user's own helpers, --dry-run, idempotence, --undo
// removing only that value, a value removed by hand, and a configured helper
// git cannot run.
#include <catch2/catch.hpp>

#include "user_home.hpp"

namespace test_git_config {

using namespace hostkeeper::it;
namespace fs = std::filesystem;

namespace {

// `git config --global --get-all credential.helper` in the home.
std::string git_helpers(const UserHome& u) {
    const Result r =
        run({"/usr/bin/git", "config", "--global", "--get-all", "credential.helper"}, u.options);
    return r.out;
}

void git_config_add(const UserHome& u, const std::string& value) {
    const Result r =
        run({"/usr/bin/git", "config", "--global", "--add", "credential.helper", value}, u.options);
    REQUIRE(r.exit_code == 0);
}

// A PATH of the home's bin directory and git alone: an installed
// git-credential-hostkeeper (the package test installs one for a while) is
// not on it.
void use_git_only_path(UserHome& u) {
    const fs::path tools = u.root / "git-only";
    fs::create_directories(tools);
    fs::create_symlink("/usr/bin/git", tools / "git");
    u.options.env["PATH"] = u.bin_dir.string() + ":" + tools.string();
    u.options.env["GIT_CONFIG_NOSYSTEM"] = "1";
    u.options.env["GIT_CONFIG_GLOBAL"] = std::nullopt;
}

}  // namespace

TEST_CASE("setup --git adds hostkeeper after the user's helper; --git --undo removes only it",
          "[setup]") {
    UserHome u;
    use_git_only_path(u);
    u.put_on_path("git-credential-hostkeeper");
    git_config_add(u, "store");

    const Result dry = u.hostkeeper({"setup", "--git", "--dry-run"});
    INFO(dry.out << dry.err);
    REQUIRE(dry.exit_code == 0);
    CHECK_THAT(dry.out, Catch::Contains("git: would add credential.helper hostkeeper to the "
                                        "global git configuration"));
    CHECK(git_helpers(u) == "store\n");

    const Result first = u.hostkeeper({"setup", "--git"});
    INFO(first.out << first.err);
    REQUIRE(first.exit_code == 0);
    CHECK_THAT(first.out, Catch::Contains("git: asks credential.helper store first"));
    CHECK_THAT(first.out, Catch::Contains("git: added credential.helper hostkeeper"));
    CHECK(git_helpers(u) == "store\nhostkeeper\n");

    const Result doctor = u.hostkeeper({"doctor"});
    CHECK_THAT(doctor.out,
               Catch::Contains("ok    git: credential.helper hostkeeper is configured"));
    CHECK_THAT(doctor.out, Catch::Contains("warn  git: asks credential.helper store first"));

    const Result again = u.hostkeeper({"setup", "--git"});
    CHECK(again.exit_code == 0);
    CHECK_THAT(again.out,
               Catch::Contains("git: credential.helper hostkeeper is already configured"));
    CHECK(git_helpers(u) == "store\nhostkeeper\n");

    // --git --undo leaves the Terraform set-up's records.
    const Result undo = u.hostkeeper({"setup", "--git", "--undo"});
    INFO(undo.out << undo.err);
    CHECK(undo.exit_code == 0);
    CHECK_THAT(undo.out, Catch::Contains("removed credential.helper hostkeeper from " +
                                         (u.home / ".gitconfig").string()));
    CHECK(git_helpers(u) == "store\n");
    const Result undo_rest = u.hostkeeper({"setup", "--git", "--undo"});
    CHECK_THAT(undo_rest.out, Catch::Contains("nothing to undo: hostkeeper setup has no record of "
                                              "git changes"));
}

TEST_CASE("setup --undo leaves git alone when the user removed the helper by hand", "[setup]") {
    UserHome u;
    use_git_only_path(u);
    u.put_on_path("git-credential-hostkeeper");
    REQUIRE(u.hostkeeper({"setup", "--git"}).exit_code == 0);
    REQUIRE(git_helpers(u) == "hostkeeper\n");
    REQUIRE(
        run({"/usr/bin/git", "config", "--global", "--unset-all", "credential.helper"}, u.options)
            .exit_code == 0);
    git_config_add(u, "cache");

    const Result undo = u.hostkeeper({"setup", "--undo"});
    INFO(undo.out << undo.err);
    CHECK(undo.exit_code == 0);
    CHECK_THAT(undo.out, Catch::Contains("left " + (u.home / ".gitconfig").string() +
                                         " alone: credential.helper hostkeeper is no longer "
                                         "there"));
    CHECK(git_helpers(u) == "cache\n");
}

TEST_CASE("setup --git names the helper by its path when it is not on PATH", "[setup]") {
    UserHome u;
    use_git_only_path(u);
    const fs::path helper = bin("git-credential-hostkeeper");
    REQUIRE(fs::exists(helper));
    const Result first = u.hostkeeper({"setup", "--git"});
    INFO(first.out << first.err);
    REQUIRE(first.exit_code == 0);
    CHECK(git_helpers(u) == helper.string() + "\n");
    CHECK_THAT(u.hostkeeper({"doctor"}).out,
               Catch::Contains("ok    git: credential.helper " + helper.string()));
}

TEST_CASE("doctor fails when git asks a hostkeeper helper it cannot run, and skips without one",
          "[setup]") {
    UserHome u;
    use_git_only_path(u);
    const Result none = u.hostkeeper({"doctor"});
    CHECK_THAT(none.out, Catch::Contains("skip  git: does not ask hostkeeper"));

    git_config_add(u, "hostkeeper");  // git-credential-hostkeeper is not on this PATH
    const Result broken = u.hostkeeper({"doctor"});
    CHECK_THAT(broken.out, Catch::Contains("git: credential.helper hostkeeper is configured, but "
                                           "git-credential-hostkeeper cannot be run"));
}

TEST_CASE("setup --git --undo removes the value from the file setup wrote", "[setup]") {
    UserHome u;
    use_git_only_path(u);
    u.put_on_path("git-credential-hostkeeper");
    const fs::path dotfiles = u.root / "dotfiles" / "gitconfig";
    u.write(dotfiles, "[user]\n\tname = someone\n");
    u.options.env["GIT_CONFIG_GLOBAL"] = dotfiles.string();
    REQUIRE(u.hostkeeper({"setup", "--git"}).exit_code == 0);
    CHECK_THAT(read_file(dotfiles), Catch::Contains("helper = hostkeeper"));
    CHECK_FALSE(fs::exists(u.home / ".gitconfig"));

    u.options.env["GIT_CONFIG_GLOBAL"] = std::nullopt;  // a later shell without it
    const Result undo = u.hostkeeper({"setup", "--git", "--undo"});
    INFO(undo.out << undo.err);
    CHECK(undo.exit_code == 0);
    CHECK_THAT(undo.out,
               Catch::Contains("removed credential.helper hostkeeper from " + dotfiles.string()));
    CHECK(read_file(dotfiles) == "[user]\n\tname = someone\n");
}

TEST_CASE("doctor follows git's list: an empty credential.helper drops hostkeeper before it",
          "[setup]") {
    UserHome u;
    use_git_only_path(u);
    u.put_on_path("git-credential-hostkeeper");
    git_config_add(u, "hostkeeper");
    CHECK_THAT(u.hostkeeper({"doctor"}).out,
               Catch::Contains("ok    git: credential.helper hostkeeper is configured"));
    git_config_add(u, "");
    git_config_add(u, "store");
    const Result reset = u.hostkeeper({"doctor"});
    CHECK_THAT(reset.out, Catch::Contains("skip  git: does not ask hostkeeper"));
    CHECK_THAT(reset.out, !Catch::Contains("ok    git:"));
}

}  // namespace test_git_config
