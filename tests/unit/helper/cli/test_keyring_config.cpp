// hostkeeper migrate's edit of config.toml: backend = "TO" under [keyring],
// every other line and comment kept, and the file replaced with its mode.
#include <sys/stat.h>
#include <unistd.h>

#include <catch2/catch.hpp>
#include <cstdlib>
#include <filesystem>
#include <fstream>

#include "helper/cli/keyring_config.hpp"
#include "proto/file_io.hpp"

namespace test_keyring_config {

namespace cli = hostkeeper::helper::cli;
namespace fs = std::filesystem;

TEST_CASE("config.toml: an existing backend line of the keyring table is replaced in place",
          "[cli][keyring_config]") {
    const std::string before =
        "# my settings\n"
        "log_level = \"info\"\n\n"
        "[keyring]\n"
        "  backend = 'secret-service'   # chosen by hand\n"
        "unlock_timeout = \"30s\"\n\n"
        "[credentials]\n"
        "backend = \"not this one\"\n";
    CHECK(cli::with_keyring_backend(before, "pass") ==
          "# my settings\n"
          "log_level = \"info\"\n\n"
          "[keyring]\n"
          "  backend = \"pass\"   # chosen by hand\n"
          "unlock_timeout = \"30s\"\n\n"
          "[credentials]\n"
          "backend = \"not this one\"\n");
}

TEST_CASE("config.toml: quoted and spaced headers and keys are the same table and key",
          "[cli][keyring_config]") {
    CHECK(cli::with_keyring_backend("[ \"keyring\" ]\n\"backend\"=\"auto\"\n", "pass") ==
          "[ \"keyring\" ]\n\"backend\"=\"pass\"\n");
    CHECK(cli::with_keyring_backend("keyring . backend = \"auto\" # top level\n[x]\n", "pass") ==
          "keyring . backend = \"pass\" # top level\n[x]\n");
}

TEST_CASE("config.toml: no backend line: added at the top of the keyring table",
          "[cli][keyring_config]") {
    CHECK(cli::with_keyring_backend("[keyring] # the keyring\nunlock_timeout = \"30s\"\n[other]\n",
                                    "secret-service") ==
          "[keyring] # the keyring\nbackend = \"secret-service\"\nunlock_timeout = "
          "\"30s\"\n[other]\n");
    // A header on the last line without a newline.
    CHECK(cli::with_keyring_backend("a = 1\n[keyring]", "pass") ==
          "a = 1\n[keyring]\nbackend = \"pass\"\n");
    // A [keyring.sub] table is not [keyring]; nor is an array of tables, which
    // cannot take a [keyring] table beside it.
    CHECK(cli::with_keyring_backend("[keyring.sub]\nbackend = \"x\"\n[[other]]\n", "pass") ==
          "[keyring.sub]\nbackend = \"x\"\n[[other]]\n\n[keyring]\nbackend = \"pass\"\n");
    CHECK(cli::with_keyring_backend("[keyring.a.b]\n[keyring.c]\n", "pass") ==
          "[keyring.a.b]\n[keyring.c]\n\n[keyring]\nbackend = \"pass\"\n");
    CHECK_THROWS_AS(cli::with_keyring_backend("[[keyring]]\nbackend = \"x\"\n", "pass"),
                    hostkeeper::proto::FileError);
    // A [keyring] header after its sub-table is the table's header.
    CHECK(cli::with_keyring_backend("[keyring.sub]\nx = 1\n[keyring]\ny = 2\n", "pass") ==
          "[keyring.sub]\nx = 1\n[keyring]\nbackend = \"pass\"\ny = 2\n");
}

TEST_CASE("config.toml: top-level keyring.* keys get keyring.backend beside them",
          "[cli][keyring_config]") {
    CHECK(cli::with_keyring_backend(
              "keyring.password_store_dir = \"/s\"\nkeyring.unlock_timeout = \"9s\"\n[a]\n",
              "pass") ==
          "keyring.password_store_dir = \"/s\"\nkeyring.unlock_timeout = "
          "\"9s\"\nkeyring.backend = \"pass\"\n[a]\n");
}

TEST_CASE("config.toml: no keyring table: it is appended, and an empty file gets only it",
          "[cli][keyring_config]") {
    CHECK(cli::with_keyring_backend("", "pass") == "[keyring]\nbackend = \"pass\"\n");
    CHECK(cli::with_keyring_backend("log_level = \"debug\"", "pass") ==
          "log_level = \"debug\"\n\n[keyring]\nbackend = \"pass\"\n");
}

TEST_CASE("config.toml: look-alikes inside strings, arrays and comments are left alone",
          "[cli][keyring_config]") {
    const std::string text =
        "note = \"\"\"\n[keyring]\nbackend = \"x\"\n\"\"\"\n"
        "list = [\n  \"[keyring]\", # [keyring]\n  [1],\n]\n"
        "# [keyring]\n# backend = \"y\"\n"
        "s = 'backend = \"z\"'\n";
    CHECK(cli::with_keyring_backend(text, "pass") == text + "\n[keyring]\nbackend = \"pass\"\n");
}

TEST_CASE("config.toml: keyring as an inline table is refused, not broken",
          "[cli][keyring_config]") {
    CHECK_THROWS_AS(cli::with_keyring_backend("keyring = { backend = \"pass\" }\n", "pass"),
                    hostkeeper::proto::FileError);
}

TEST_CASE("config.toml: a malformed file is refused with its line, and left as it was",
          "[cli][keyring_config]") {
    CHECK_THROWS_WITH(cli::with_keyring_backend("a = 1\n[keyring\nbackend = \"x\"\n", "pass"),
                      Catch::Contains("not valid TOML, line 2"));
    CHECK_THROWS_AS(cli::with_keyring_backend("keyring = 1\n", "pass"),
                    hostkeeper::proto::FileError);
    CHECK_THROWS_AS(cli::with_keyring_backend("[keyring]\nbackend = [\"pass\"]\n", "pass"),
                    hostkeeper::proto::FileError);

    const fs::path dir = fs::temp_directory_path() / ("hk-kc-bad-" + std::to_string(::getpid()));
    fs::remove_all(dir);
    fs::create_directories(dir);
    const fs::path path = dir / "config.toml";
    const std::string broken = "# mine\n[keyring]\nbackend = \"secret-service\n";
    { std::ofstream(path) << broken; }
    CHECK_THROWS_AS(cli::write_keyring_backend(path, "pass"), hostkeeper::proto::FileError);
    CHECK(hostkeeper::proto::read_file_if_exists(path) == broken);
    fs::remove_all(dir);
}

TEST_CASE("config.toml: dotted keys, multi-line values and Unicode keep their bytes",
          "[cli][keyring_config]") {
    // keyring.backend beside dotted keys whose last value spans lines, and
    // before a [keyring.sub] table that has a header of its own.
    CHECK(
        cli::with_keyring_backend("keyring.a = [1,\n  2]  # two\n[keyring.sub]\nz = 1\n", "pass") ==
        "keyring.a = [1,\n  2]  # two\nkeyring.backend = \"pass\"\n[keyring.sub]\nz = 1\n");
    // Columns count code points: a value after non-ASCII text on its line.
    CHECK(cli::with_keyring_backend("[keyring]\n\"bäckend\" = 1\nbackend = \"ü\" # é\n", "pass") ==
          "[keyring]\n\"bäckend\" = 1\nbackend = \"pass\" # é\n");
    CHECK(cli::with_keyring_backend("[keyring]\r\nbackend = 'x'\r\n", "pass") ==
          "[keyring]\r\nbackend = \"pass\"\r\n");
}

TEST_CASE("config.toml: the path is the daemon's, and the file is written with its mode kept",
          "[cli][keyring_config]") {
    const fs::path dir = fs::temp_directory_path() / ("hk-kc-" + std::to_string(::getpid()));
    fs::remove_all(dir);
    const char* saved = std::getenv("XDG_CONFIG_HOME");
    const std::string saved_value = saved != nullptr ? saved : "";
    ::setenv("XDG_CONFIG_HOME", dir.c_str(), 1);
    const fs::path path = cli::daemon_config_path();
    CHECK(path == dir / "hostkeeper" / "config.toml");
    ::setenv("XDG_CONFIG_HOME", "relative/is/ignored", 1);
    const char* home = std::getenv("HOME");
    CHECK(cli::daemon_config_path() ==
          fs::path(home != nullptr ? home : "/") / ".config" / "hostkeeper" / "config.toml");
    if (saved != nullptr) {
        ::setenv("XDG_CONFIG_HOME", saved_value.c_str(), 1);
    } else {
        ::unsetenv("XDG_CONFIG_HOME");
    }

    // A new file (and its directory): mode 0600.
    cli::write_keyring_backend(path, "pass");
    CHECK(hostkeeper::proto::read_file_if_exists(path) == "[keyring]\nbackend = \"pass\"\n");
    CHECK((fs::status(path).permissions() & fs::perms::all) ==
          (fs::perms::owner_read | fs::perms::owner_write));
    // An existing file keeps its mode and its other lines.
    { std::ofstream(path) << "# mine\n[keyring]\nbackend = \"pass\"\n"; }
    ::chmod(path.c_str(), 0640);
    cli::write_keyring_backend(path, "secret-service");
    CHECK(hostkeeper::proto::read_file_if_exists(path) ==
          "# mine\n[keyring]\nbackend = \"secret-service\"\n");
    struct stat st {};
    REQUIRE(::stat(path.c_str(), &st) == 0);
    CHECK((st.st_mode & 07777) == 0640);
    fs::remove_all(dir);
}

}  // namespace test_keyring_config
