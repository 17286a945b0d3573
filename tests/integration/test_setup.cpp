// hostkeeper setup: links the helper, adds the credentials_helper block to the
// file each tool reads, records what it did; --dry-run, --undo, idempotence,
// other content, a different helper, TF_CLI_CONFIG_FILE, OpenTofu's XDG places;
// --undo --restore-tokens against the real keyring (and a locked one).
#include <algorithm>
#include <catch2/catch.hpp>
#include <nlohmann/json.hpp>

#include "keyring_control.hpp"
#include "user_home.hpp"

namespace test_setup {

using namespace hostkeeper::it;
namespace fs = std::filesystem;

namespace {

const std::string kBlock =
    "# Added by \"hostkeeper setup\"; \"hostkeeper setup --undo\" removes it.\n"
    "credentials_helper \"hostkeeper\" {}\n";

// Every path below `dir`, for "nothing changed" checks.
std::vector<std::string> tree(const fs::path& dir) {
    std::vector<std::string> paths;
    for (const auto& entry : fs::recursive_directory_iterator(dir))
        paths.push_back(entry.path().string());
    std::sort(paths.begin(), paths.end());
    return paths;
}

}  // namespace

TEST_CASE("setup --terraform in an empty home; again changes nothing; --undo takes it all back",
          "[setup]") {
    UserHome u;
    const fs::path rc = u.home / ".terraformrc";
    const fs::path link = helper_link(u.home / ".terraform.d" / "plugins");

    const Result first = u.hostkeeper({"setup", "--terraform"});
    INFO(first.out << first.err);
    REQUIRE(first.exit_code == 0);
    CHECK(read_file(rc) == kBlock);
    CHECK(mode_of(rc) == 0600);
    REQUIRE(fs::is_symlink(link));
    CHECK(fs::read_symlink(link) == bin("terraform-credentials-hostkeeper"));
    CHECK_THAT(first.out, Catch::Contains("linked " + link.string()));
    CHECK_THAT(first.out,
               Catch::Contains("added credentials_helper \"hostkeeper\" {} to " + rc.string()));
    CHECK_THAT(
        first.out,
        Catch::Contains("no user manager is running; the helper starts hostkeeperd on demand"));
    CHECK(fs::exists(u.state / "hostkeeper" / "setup.json"));

    const Result again = u.hostkeeper({"setup", "--terraform"});
    CHECK(again.exit_code == 0);
    CHECK_THAT(again.out, Catch::Contains("nothing to change"));
    CHECK_THAT(again.out, Catch::Contains("already"));
    CHECK(read_file(rc) == kBlock);

    const Result undo = u.hostkeeper({"setup", "--undo"});
    INFO(undo.out << undo.err);
    CHECK(undo.exit_code == 0);
    CHECK_FALSE(fs::exists(rc));
    CHECK_FALSE(fs::exists(fs::symlink_status(link)));
    CHECK_FALSE(fs::exists(u.state / "hostkeeper" / "setup.json"));
    CHECK_THAT(undo.out, Catch::Contains("removed " + rc.string() + " (setup created it)"));

    const Result nothing = u.hostkeeper({"setup", "--undo"});
    CHECK(nothing.exit_code == 0);
    CHECK_THAT(nothing.out, Catch::Contains("nothing to undo"));
}

TEST_CASE("setup --dry-run and setup --undo --dry-run only print", "[setup]") {
    UserHome u;
    const auto before = tree(u.root);
    const Result dry = u.hostkeeper({"setup", "--terraform", "--dry-run"});
    CHECK(dry.exit_code == 0);
    CHECK_THAT(dry.out, Catch::Contains("would link"));
    CHECK_THAT(dry.out, Catch::Contains("would add credentials_helper"));
    CHECK_THAT(dry.out, Catch::Contains("dry run: nothing was changed"));
    CHECK(tree(u.root) == before);

    REQUIRE(u.hostkeeper({"setup", "--terraform"}).exit_code == 0);
    const auto after_setup = tree(u.root);
    const Result undo_dry = u.hostkeeper({"setup", "--undo", "--dry-run"});
    CHECK(undo_dry.exit_code == 0);
    CHECK_THAT(undo_dry.out, Catch::Contains("would remove"));
    CHECK(tree(u.root) == after_setup);
    CHECK(read_file(u.home / ".terraformrc") == kBlock);
}

TEST_CASE(
    "setup keeps every other line of an existing config, and its mode; --undo restores it byte for "
    "byte",
    "[setup]") {
    UserHome u;
    const fs::path rc = u.home / ".terraformrc";
    // No final newline, comments that mention the block, another block.
    const std::string original =
        "# my settings\n"
        "# credentials_helper \"old\" {}\n"
        "plugin_cache_dir = \"$HOME/.terraform.d/plugin-cache\"\n"
        "provider_installation {\n"
        "  direct {}\n"
        "}";
    u.write(rc, original, 0640);

    const Result setup = u.hostkeeper({"setup", "--terraform"});
    INFO(setup.out << setup.err);
    REQUIRE(setup.exit_code == 0);
    CHECK(read_file(rc) == original + "\n\n" + kBlock);
    CHECK(mode_of(rc) == 0640);

    REQUIRE(u.hostkeeper({"setup", "--undo"}).exit_code == 0);
    CHECK(read_file(rc) == original);
    CHECK(mode_of(rc) == 0640);
}

TEST_CASE("setup refuses, changing nothing, when a different credentials_helper is configured",
          "[setup]") {
    UserHome u;
    const fs::path rc = u.home / ".terraformrc";
    const std::string original =
        "disable_checkpoint = true\n\ncredentials_helper \"vault\" {\n  args = []\n}\n";
    u.write(rc, original);
    const auto before = tree(u.root);

    const Result setup = u.hostkeeper({"setup", "--terraform"});
    CHECK(setup.exit_code == 1);
    CHECK_THAT(setup.err, Catch::Contains(rc.string() + ":3: credentials_helper \"vault\""));
    CHECK_THAT(setup.err, Catch::Contains("allows only one credentials_helper"));
    CHECK_THAT(setup.err, Catch::Contains("nothing was changed"));
    CHECK(read_file(rc) == original);
    CHECK(tree(u.root) == before);
}

TEST_CASE("setup refuses a config file it cannot scan, changing nothing", "[setup]") {
    UserHome u;
    const fs::path rc = u.home / ".terraformrc";
    u.write(rc, "provider_installation {\n  direct {}\n");
    const Result setup = u.hostkeeper({"setup", "--terraform"});
    CHECK(setup.exit_code == 1);
    CHECK_THAT(setup.err, Catch::Contains("never closed"));
    CHECK(read_file(rc) == "provider_installation {\n  direct {}\n");
}

TEST_CASE("setup writes the file named by TF_CLI_CONFIG_FILE, not ~/.terraformrc", "[setup]") {
    UserHome u;
    const fs::path custom = u.root / "ci" / "terraform.rc";
    fs::create_directories(custom.parent_path());
    u.options.env["TF_CLI_CONFIG_FILE"] = custom.string();
    const Result setup = u.hostkeeper({"setup", "--terraform"});
    INFO(setup.out << setup.err);
    REQUIRE(setup.exit_code == 0);
    CHECK(read_file(custom) == kBlock);
    CHECK_FALSE(fs::exists(u.home / ".terraformrc"));
    REQUIRE(u.hostkeeper({"setup", "--undo"}).exit_code == 0);
    CHECK_FALSE(fs::exists(custom));
}

TEST_CASE("setup and --undo take a relative TF_CLI_CONFIG_FILE as relative to where they run",
          "[setup]") {
    UserHome u;
    const fs::path work = u.root / "project";
    fs::create_directories(work);
    u.options.env["TF_CLI_CONFIG_FILE"] = "terraform.rc";  // no directory part at all
    const auto in_dir = [&u](const fs::path& dir, const std::string& args) {
        return run({"/bin/sh", "-c", "cd \"$1\" && exec \"$2\" " + args, "sh", dir.string(),
                    bin("hostkeeper")},
                   u.options);
    };
    const Result setup = in_dir(work, "setup --terraform");
    INFO(setup.out << setup.err);
    REQUIRE(setup.exit_code == 0);
    CHECK(read_file(work / "terraform.rc") == kBlock);
    CHECK_THAT(setup.out, Catch::Contains((work / "terraform.rc").string()));
    // --undo from elsewhere still finds the file setup changed: the record holds its full path.
    const Result undo = in_dir(u.root, "setup --undo");
    INFO(undo.out << undo.err);
    REQUIRE(undo.exit_code == 0);
    CHECK_FALSE(fs::exists(work / "terraform.rc"));
    CHECK_THAT(undo.out, Catch::Contains("removed " + (work / "terraform.rc").string()));
}

TEST_CASE("setup --opentofu uses OpenTofu's XDG places when ~/.terraform.d does not exist",
          "[setup]") {
    UserHome u;
    const Result setup = u.hostkeeper({"setup", "--opentofu"});
    INFO(setup.out << setup.err);
    REQUIRE(setup.exit_code == 0);
    CHECK(read_file(u.config / "opentofu" / "tofurc") == kBlock);
    const fs::path link = helper_link(u.data / "opentofu" / "plugins");
    REQUIRE(fs::is_symlink(link));
    CHECK(fs::read_symlink(link) == bin("terraform-credentials-hostkeeper"));
    // Creating ~/.terraform.d would move OpenTofu's own files there.
    CHECK_FALSE(fs::exists(u.home / ".terraform.d"));
    CHECK_FALSE(fs::exists(u.home / ".terraformrc"));
}

TEST_CASE(
    "setup refuses to create ~/.terraform.d while OpenTofu's XDG credentials.tfrc.json holds "
    "tokens",
    "[setup]") {
    UserHome u;
    const fs::path tofu_credentials = u.config / "opentofu" / "credentials.tfrc.json";
    u.write(tofu_credentials, R"({"credentials":{"tofu.example.com":{"token":"xdg-token"}}})");
    const auto before = tree(u.root);

    // Terraform's plugin directory is ~/.terraform.d/plugins: creating it
    // would make OpenTofu stop reading its XDG directory.
    const Result setup = u.hostkeeper({"setup", "--terraform"});
    CHECK(setup.exit_code == 1);
    CHECK_THAT(setup.err, Catch::Contains("would make OpenTofu read its credentials there"));
    CHECK_THAT(setup.err, Catch::Contains("hostkeeper import"));
    CHECK(tree(u.root) == before);
    CHECK_FALSE(fs::exists(u.home / ".terraform.d"));

    // OpenTofu alone uses its XDG plugin directory: nothing to refuse.
    CHECK(u.hostkeeper({"setup", "--opentofu"}).exit_code == 0);
    CHECK_FALSE(fs::exists(u.home / ".terraform.d"));
}

TEST_CASE("setup without flags sets up the tools it finds, and says so when it finds none",
          "[setup]") {
    UserHome u;
    const Result none = u.hostkeeper({"setup"});
    CHECK(none.exit_code == 0);
    CHECK_THAT(none.out, Catch::Contains("neither Terraform nor OpenTofu was found"));
    CHECK_FALSE(fs::exists(u.home / ".terraformrc"));
    CHECK_FALSE(fs::exists(u.home / ".terraform.d"));

    u.put_on_path("terraform");
    const Result found = u.hostkeeper({"setup"});
    INFO(found.out << found.err);
    REQUIRE(found.exit_code == 0);
    CHECK(read_file(u.home / ".terraformrc") == kBlock);
    CHECK_THAT(found.out, Catch::Contains("Terraform: "));
    CHECK_THAT(found.out, !Catch::Contains("OpenTofu: "));
    CHECK_FALSE(fs::exists(u.config / "opentofu"));
}

TEST_CASE("setup replaces a stale helper link; --undo puts the old one back", "[setup]") {
    UserHome u;
    const fs::path link = helper_link(u.home / ".terraform.d" / "plugins");
    fs::create_directories(link.parent_path());
    fs::create_symlink("/usr/local/bin/terraform-credentials-hostkeeper-gone", link);
    const Result setup = u.hostkeeper({"setup", "--terraform"});
    INFO(setup.out << setup.err);
    REQUIRE(setup.exit_code == 0);
    CHECK_THAT(setup.out,
               Catch::Contains(
                   "replacing the link to /usr/local/bin/terraform-credentials-hostkeeper-gone"));
    CHECK(fs::read_symlink(link) == bin("terraform-credentials-hostkeeper"));
    REQUIRE(u.hostkeeper({"setup", "--undo"}).exit_code == 0);
    CHECK(fs::read_symlink(link) == "/usr/local/bin/terraform-credentials-hostkeeper-gone");
}

TEST_CASE("setup refuses to replace a helper file that is not a symlink", "[setup]") {
    UserHome u;
    const fs::path link = helper_link(u.home / ".terraform.d" / "plugins");
    u.write(link, "#!/bin/sh\n", 0755);
    const Result setup = u.hostkeeper({"setup", "--terraform"});
    CHECK(setup.exit_code == 1);
    CHECK_THAT(setup.err, Catch::Contains("is not a symlink"));
    CHECK_FALSE(fs::exists(u.home / ".terraformrc"));
}

TEST_CASE("--undo leaves alone a block the user has changed since", "[setup]") {
    UserHome u;
    const fs::path rc = u.home / ".terraformrc";
    REQUIRE(u.hostkeeper({"setup", "--terraform"}).exit_code == 0);
    const std::string edited =
        "credentials_helper \"hostkeeper\" {\n  args = [\"--timeout=60\"]\n}\n";
    u.write(rc, edited);
    const Result undo = u.hostkeeper({"setup", "--undo"});
    CHECK(undo.exit_code == 0);
    CHECK_THAT(undo.out, Catch::Contains("left " + rc.string() + " alone"));
    CHECK(read_file(rc) == edited);
    CHECK_FALSE(fs::exists(fs::symlink_status(helper_link(u.home / ".terraform.d" / "plugins"))));
}

namespace {

const std::string kRestoreFile = R"({
  "credentials": {
    "B.Restore.Example.COM": {"token": "tok-file-b"},
    "other.restore.example.com": {"token": "tok-file-other"}
  },
  "comment": "kept"
})";

}  // namespace

TEST_CASE(
    "setup --undo --restore-tokens writes the stored tokens into credentials.tfrc.json, keeping "
    "its entries, mode 0600, then undoes",
    "[setup]") {
    UserHome u;
    const fs::path rc = u.home / ".terraformrc";
    const fs::path file = u.home / ".terraform.d" / "credentials.tfrc.json";
    REQUIRE(u.hostkeeper({"setup", "--terraform"}).exit_code == 0);
    REQUIRE(
        u.helper({"store", "a.restore.example.com"}, R"({"token":"tok-keyring-a"})").exit_code ==
        0);
    REQUIRE(
        u.helper({"store", "b.restore.example.com"}, R"({"token":"tok-keyring-b"})").exit_code ==
        0);
    u.write(file, kRestoreFile, 0644);

    const Result undo = u.hostkeeper({"setup", "--undo", "--restore-tokens"});
    INFO(undo.out << undo.err);
    REQUIRE(undo.exit_code == 0);
    CHECK_THAT(undo.out, Catch::Contains("a.restore.example.com"));
    CHECK_THAT(undo.out, Catch::Contains("PLAINTEXT"));
    CHECK_THAT(undo.out, Catch::Contains(file.string()));
    CHECK_THAT(undo.out, Catch::Contains("kept the entry"));
    for (const std::string token : {"tok-keyring-a", "tok-keyring-b", "tok-file-b"}) {
        CHECK_THAT(undo.out + undo.err, !Catch::Contains(token));
    }

    const auto written = nlohmann::ordered_json::parse(read_file(file));
    const auto& credentials = written.at("credentials");
    CHECK(credentials.at("a.restore.example.com") ==
          nlohmann::ordered_json{{"token", "tok-keyring-a"}});
    // The file's own entry for b (another spelling of the host) is kept, not doubled.
    CHECK(credentials.at("B.Restore.Example.COM").at("token") == "tok-file-b");
    CHECK_FALSE(credentials.contains("b.restore.example.com"));
    CHECK(credentials.at("other.restore.example.com").at("token") == "tok-file-other");
    CHECK(written.at("comment") == "kept");
    CHECK(mode_of(file) == 0600);
    // And then the undo itself: Terraform no longer uses the helper.
    CHECK_FALSE(fs::exists(rc));
    CHECK_FALSE(fs::exists(fs::symlink_status(helper_link(u.home / ".terraform.d" / "plugins"))));
    // The keyring keeps its tokens.
    CHECK(u.helper({"get", "a.restore.example.com"}).out == "{\"token\":\"tok-keyring-a\"}\n");

    // Into a home without the file: created, 0600.
    UserHome fresh;
    REQUIRE(fresh.helper({"store", "c.restore.example.com"}, R"({"token":"tok-keyring-c"})")
                .exit_code == 0);
    REQUIRE(fresh
                .helper({"store", "d.restore.example.com"},
                        R"({"token":"tok-keyring-d","expires_at":"2099-01-01T00:00:00Z"})")
                .exit_code == 0);
    const Result created = fresh.hostkeeper({"setup", "--undo", "--restore-tokens"});
    INFO(created.out << created.err);
    REQUIRE(created.exit_code == 0);
    // A token that expires is written with a word about it; one that does not, without.
    CHECK_THAT(created.out,
               Catch::Contains("note: the token of d.restore.example.com expires at "
                               "2099-01-01T00:00:00Z (in ") &&
                   Catch::Contains("in the file nothing renews it: then run terraform login "
                                   "d.restore.example.com"));
    CHECK_FALSE(Catch::contains(created.out, "note: the token of c.restore.example.com"));
    const fs::path fresh_file = fresh.home / ".terraform.d" / "credentials.tfrc.json";
    CHECK(nlohmann::ordered_json::parse(read_file(fresh_file))
              .at("credentials")
              .at("c.restore.example.com")
              .at("token") == "tok-keyring-c");
    CHECK(mode_of(fresh_file) == 0600);
    CHECK_THAT(created.out, Catch::Contains("nothing to undo"));
}

TEST_CASE("setup --restore-tokens without --undo is refused", "[setup]") {
    UserHome u;
    const Result r = u.hostkeeper({"setup", "--restore-tokens"});
    CHECK(r.exit_code == 2);
    CHECK_THAT(r.err, Catch::Contains("--restore-tokens goes with --undo"));
}

TEST_CASE("setup --undo --restore-tokens with a locked keyring fails and changes nothing",
          "[setup-restore-locked]") {
    UserHome u;
    const fs::path rc = u.home / ".terraformrc";
    const fs::path file = u.home / ".terraform.d" / "credentials.tfrc.json";
    REQUIRE(u.hostkeeper({"setup", "--terraform"}).exit_code == 0);
    REQUIRE(
        u.helper({"store", "locked.restore.example.com"}, R"({"token":"tok-locked"})").exit_code ==
        0);
    u.write(file, kRestoreFile, 0644);
    const auto before = tree(u.root);
    REQUIRE(lock_login_collection_seen_by(u.socket).exit_code == 0);

    const Result r = u.hostkeeper({"setup", "--undo", "--restore-tokens"});
    INFO(r.out << r.err);
    CHECK(r.exit_code == 1);
    CHECK_THAT(r.err, Catch::Contains("cannot read the stored tokens"));
    CHECK_THAT(r.err, Catch::Contains("nothing was changed"));
    CHECK_THAT(r.err, Catch::Contains("hostkeeper unlock"));
    CHECK(read_file(file) == kRestoreFile);
    CHECK(mode_of(file) == 0644);
    CHECK(read_file(rc) == kBlock);  // not undone
    CHECK(tree(u.root) == before);
    REQUIRE(unlock_login_collection());
}

}  // namespace test_setup
