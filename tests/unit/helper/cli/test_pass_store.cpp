// What the command line reads of a pass store by itself: hostkeeper's entry
// files, their hosts, the .gpg-id files and PASSWORD_STORE_GPG_OPTS.
#include <unistd.h>

#include <catch2/catch.hpp>
#include <filesystem>
#include <fstream>

#include "helper/cli/pass_doctor.hpp"
#include "helper/cli/pass_store.hpp"

namespace test_pass_store {

namespace cli = hostkeeper::helper::cli;
namespace fs = std::filesystem;

namespace {

void touch(const fs::path& path, const std::string& text = "x") {
    fs::create_directories(path.parent_path());
    std::ofstream(path) << text;
}

struct Store {
    fs::path root = fs::temp_directory_path() / ("hk-pass-unit-" + std::to_string(::getpid()));
    Store() { fs::remove_all(root); }
    ~Store() { fs::remove_all(root); }
    Store(const Store&) = delete;
    Store& operator=(const Store&) = delete;
};

}  // namespace

TEST_CASE("pass store: every hostkeeper/**/*.gpg, sorted, hidden folders skipped",
          "[cli][pass_store]") {
    Store s;
    CHECK(cli::pass_entry_files(s.root).empty());  // no store at all
    touch(s.root / "other" / "x.gpg");
    touch(s.root / "top.gpg");
    touch(s.root / "hostkeeper" / "b.example.gpg");
    touch(s.root / "hostkeeper" / "a.example_8443.gpg");
    touch(s.root / "hostkeeper" / "team" / "c.example.gpg");
    touch(s.root / "hostkeeper" / ".git" / "d.gpg");
    touch(s.root / "hostkeeper" / "notes.txt");
    touch(s.root / "hostkeeper" / ".gpg-id", "KEY\n");
    fs::create_directories(s.root / "hostkeeper" / "dir.gpg");
    const std::vector<fs::path> want{s.root / "hostkeeper" / "a.example_8443.gpg",
                                     s.root / "hostkeeper" / "b.example.gpg",
                                     s.root / "hostkeeper" / "team" / "c.example.gpg"};
    CHECK(cli::pass_entry_files(s.root) == want);

    CHECK(cli::pass_entry_host(s.root, want[0]) == "a.example:8443");
    CHECK(cli::pass_entry_host(s.root, want[1]) == "b.example");
    CHECK_FALSE(cli::pass_entry_host(s.root, want[2]));  // in a sub-folder: no host entry
    CHECK_FALSE(cli::pass_entry_host(s.root, s.root / "hostkeeper" / "a_1_2.gpg"));
    CHECK_FALSE(cli::pass_entry_host(s.root, s.root / "top.gpg"));
}

TEST_CASE("pass store: the .gpg-id files of hostkeeper's entries", "[cli][pass_store]") {
    Store s;
    CHECK(cli::pass_gpg_id_files(s.root).empty());
    touch(s.root / ".gpg-id", "ROOTKEY\n");
    touch(s.root / "other" / ".gpg-id", "OTHER\n");
    touch(s.root / "hostkeeper" / "a.gpg");
    CHECK(cli::pass_gpg_id_files(s.root) == std::vector<fs::path>{s.root / ".gpg-id"});
    touch(s.root / "hostkeeper" / ".gpg-id", "HKKEY\n");
    touch(s.root / "hostkeeper" / "z" / ".gpg-id", "Z\n");
    touch(s.root / "hostkeeper" / "team" / ".gpg-id", "TEAM\n");
    CHECK(cli::pass_gpg_id_files(s.root) ==
          std::vector<fs::path>{s.root / "hostkeeper" / ".gpg-id",
                                s.root / "hostkeeper" / "team" / ".gpg-id",
                                s.root / "hostkeeper" / "z" / ".gpg-id"});

    touch(s.root / "ids", "# pass init\n  ABCDEF0123  \n\nme@example.com # mine\n#\n\r\n");
    CHECK(cli::read_gpg_ids(s.root / "ids") ==
          std::vector<std::string>{"ABCDEF0123", "me@example.com"});
}

TEST_CASE("pass store: PASSWORD_STORE_GPG_OPTS split on blanks, --homedir found",
          "[cli][pass_store]") {
    CHECK(cli::split_gpg_opts("").empty());
    CHECK(cli::split_gpg_opts("  --armor\t--trust-model  always ") ==
          std::vector<std::string>{"--armor", "--trust-model", "always"});
    CHECK_FALSE(cli::gpg_homedir_option({"--armor"}));
    CHECK(cli::gpg_homedir_option({"--homedir", "/g"}) == "/g");
    CHECK(cli::gpg_homedir_option({"--homedir=/h", "--armor"}) == "/h");
    CHECK_FALSE(cli::gpg_homedir_option({"--homedir"}));
}

TEST_CASE("pass doctor: a secret key is usable when valid and able to encrypt",
          "[cli][pass_store]") {
    const std::string good =
        "sec:u:255:22:AAAA:1700000000:::u:::scESC:::+:::23::0:\n"
        "fpr:::::::::F00D:\n"
        "ssb:u:255:18:BBBB:1700000000::::::e:::+:::23:\n";
    CHECK_FALSE(cli::secret_key_problem(good));
    const auto expired =
        cli::secret_key_problem("sec:e:255:22:AAAA:1::::::scESC:::+:::\nfpr:::::::::F00D:\n");
    REQUIRE(expired);
    CHECK(expired->what == "has expired");
    CHECK_THAT(expired->fix, Catch::Contains("gpg --quick-set-expire F00D 1y"));
    const auto revoked = cli::secret_key_problem("sec:r:255:22:AAAA:1::::::scESC:::+:::\n");
    REQUIRE(revoked);
    CHECK(revoked->what == "is revoked");
    CHECK_THAT(revoked->fix, !Catch::Contains("--quick-set-expire"));
    // Valid, but sign-only (gpg --quick-gen-key NAME ed25519 sign): a new
    // encryption subkey fixes it, renewing does not.
    const auto sign_only =
        cli::secret_key_problem("sec:u:255:22:AAAA:1::::::scSC:::+:::\nfpr:::::::::BEEF:\n");
    REQUIRE(sign_only);
    CHECK_THAT(sign_only->what, Catch::Contains("has no usable encryption subkey"));
    CHECK_THAT(sign_only->fix, Catch::Contains("gpg --quick-add-key BEEF rsa3072 encr"));
    CHECK_THAT(sign_only->fix, !Catch::Contains("--quick-set-expire"));
    const auto none = cli::secret_key_problem("");
    REQUIRE(none);
    CHECK(none->what == "has no secret key");
}

}  // namespace test_pass_store
