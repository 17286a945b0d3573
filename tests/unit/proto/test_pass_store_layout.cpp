// proto/pass_store_layout: pass's rules as hostkeeperd and the command line
// both read them: where the store is, entry names both ways, .gpg-id lines,
// blank-separated words, and which .gpg-id governs a folder.
#include <unistd.h>

#include <catch2/catch.hpp>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <optional>
#include <string>

#include "proto/pass_store_layout.hpp"

namespace test_pass_store_layout {

namespace proto = hostkeeper::proto;
namespace fs = std::filesystem;

namespace {

// Sets (or, with nullopt, unsets) an environment variable for a scope.
class ScopedEnv {
  public:
    ScopedEnv(const char* name, const std::optional<std::string>& value) : name_(name) {
        if (const char* old = std::getenv(name)) old_ = old;
        if (value) {
            ::setenv(name, value->c_str(), 1);
        } else {
            ::unsetenv(name);
        }
    }
    ScopedEnv(const ScopedEnv&) = delete;
    ScopedEnv& operator=(const ScopedEnv&) = delete;
    ~ScopedEnv() {
        if (old_) {
            ::setenv(name_, old_->c_str(), 1);
        } else {
            ::unsetenv(name_);
        }
    }

  private:
    const char* name_;
    std::optional<std::string> old_;
};

}  // namespace

TEST_CASE("pass store layout: the configured store, else PASSWORD_STORE_DIR, else ~",
          "[proto][pass_store_layout]") {
    const ScopedEnv home("HOME", "/home/someone");
    {
        const ScopedEnv dir("PASSWORD_STORE_DIR", std::nullopt);
        CHECK(proto::pass_store_dir(std::nullopt) == "/home/someone/.password-store");
        CHECK(proto::pass_store_dir(fs::path()) == "/home/someone/.password-store");
        CHECK(proto::pass_store_dir(fs::path("/srv/store")) == "/srv/store");
    }
    {
        const ScopedEnv dir("PASSWORD_STORE_DIR", "/env/store");
        CHECK(proto::pass_store_dir(std::nullopt) == "/env/store");
        CHECK(proto::pass_store_dir(fs::path("/srv/store")) == "/srv/store");
    }
    {
        // Relative names are made absolute, as pass's own cd would.
        const ScopedEnv dir("PASSWORD_STORE_DIR", "rel/store");
        CHECK(proto::pass_store_dir(std::nullopt) == fs::current_path() / "rel/store");
    }
    const ScopedEnv no_home("HOME", std::nullopt);
    const ScopedEnv dir("PASSWORD_STORE_DIR", "");
    CHECK(proto::pass_store_dir(std::nullopt) == "/.password-store");
}

TEST_CASE("pass store layout: hostkeeper/HOST, a port as HOST_PORT, and back",
          "[proto][pass_store_layout]") {
    CHECK(proto::kPassEntryFolder == "hostkeeper");
    CHECK(proto::pass_entry_name("app.example.com") == "hostkeeper/app.example.com");
    CHECK(proto::pass_entry_name("app.example.com:8443") == "hostkeeper/app.example.com_8443");
    CHECK(proto::host_of_pass_entry_file("app.example.com.gpg") == "app.example.com");
    CHECK(proto::host_of_pass_entry_file("app.example.com_8443.gpg") == "app.example.com:8443");
    // Only names hostkeeper writes: normalized hosts, one port after the last '_'.
    CHECK_FALSE(proto::host_of_pass_entry_file("App.Example.com.gpg"));
    CHECK_FALSE(proto::host_of_pass_entry_file("a_1_2.gpg"));
    CHECK_FALSE(proto::host_of_pass_entry_file("h:1.gpg"));
    CHECK_FALSE(proto::host_of_pass_entry_file(".hidden.gpg"));
    CHECK_FALSE(proto::host_of_pass_entry_file(".gpg-id"));
    CHECK_FALSE(proto::host_of_pass_entry_file("example.com"));
}

TEST_CASE("pass store layout: .gpg-id lines and blank-separated words",
          "[proto][pass_store_layout]") {
    CHECK(proto::parse_gpg_ids("# pass init\n  ABCDEF0123  \n\nme@example.com # mine\n#\n\r\n") ==
          std::vector<std::string>{"ABCDEF0123", "me@example.com"});
    CHECK(proto::parse_gpg_ids("\vKEY\f\n").size() == 1);
    CHECK(proto::parse_gpg_ids("").empty());
    CHECK(proto::split_pass_words("  --armor\t--trust-model  always \n") ==
          std::vector<std::string>{"--armor", "--trust-model", "always"});
    CHECK(proto::split_pass_words(" \t\n").empty());
}

TEST_CASE("pass store layout: the .gpg-id of a folder, up to the store's root",
          "[proto][pass_store_layout]") {
    const fs::path store =
        fs::temp_directory_path() / ("hk-proto-pass-" + std::to_string(::getpid()));
    fs::remove_all(store);
    fs::create_directories(store / "hostkeeper" / "docker");
    CHECK_FALSE(proto::gpg_id_file_for(store, store / "hostkeeper"));
    std::ofstream(store / ".gpg-id") << "ROOT\n";
    CHECK(proto::gpg_id_file_for(store, store / "hostkeeper" / "docker") == store / ".gpg-id");
    std::ofstream(store / "hostkeeper" / ".gpg-id") << "HK\n";
    CHECK(proto::gpg_id_file_for(store, store / "hostkeeper" / "docker") ==
          store / "hostkeeper" / ".gpg-id");
    // A folder outside the store has none of the store's.
    CHECK_FALSE(proto::gpg_id_file_for(store / "hostkeeper" / "docker", store / "elsewhere"));
    fs::remove_all(store);
}

}  // namespace test_pass_store_layout
