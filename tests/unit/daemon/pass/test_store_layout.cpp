// daemon/pass/store_layout, gpg_options and entry_text: pass's rules.
#include <unistd.h>

#include <catch2/catch.hpp>
#include <filesystem>
#include <fstream>

#include "daemon/pass/gpg_options.hpp"
#include "daemon/pass/pass_keyring.hpp"
#include "daemon/pass/store_layout.hpp"

using namespace hostkeeper::daemon::pass;
namespace fs = std::filesystem;

TEST_CASE("entry names: hostkeeper/HOST, a port as HOST_PORT, and back", "[daemon][pass]") {
    CHECK(entry_name("app.example.com") == "hostkeeper/app.example.com");
    CHECK(entry_name("app.example.com:8443") == "hostkeeper/app.example.com_8443");
    CHECK(host_of_entry_file("app.example.com.gpg") == "app.example.com");
    CHECK(host_of_entry_file("app.example.com_8443.gpg") == "app.example.com:8443");
    CHECK(host_of_entry_file("xn--bcher-kva.example.gpg") == "xn--bcher-kva.example");
    // Not hostkeeper's: other files, other spellings, not hostnames at all.
    CHECK_FALSE(host_of_entry_file(".gpg-id"));
    CHECK_FALSE(host_of_entry_file("app.example.com"));
    CHECK_FALSE(host_of_entry_file("App.Example.com.gpg"));
    CHECK_FALSE(host_of_entry_file("a b.gpg"));
    CHECK_FALSE(host_of_entry_file(".gpg"));
    CHECK_FALSE(host_of_entry_file("host_notaport.gpg"));
}

TEST_CASE(".gpg-id lines as pass reads them", "[daemon][pass]") {
    CHECK(parse_gpg_ids("ABCDEF\n  me@example.com  # my key\n\n# only a comment\n\tthird\n") ==
          std::vector<std::string>{"ABCDEF", "me@example.com", "third"});
    CHECK(parse_gpg_ids("").empty());
    CHECK(parse_gpg_ids("#x\n   \n").empty());
    CHECK(parse_gpg_ids("last-without-newline") ==
          std::vector<std::string>{"last-without-newline"});
    CHECK(parse_store_key("  A  B\tC \n") == std::vector<std::string>{"A", "B", "C"});
}

TEST_CASE("the .gpg-id that applies: the folder's, else the nearest parent's", "[daemon][pass]") {
    const fs::path store = fs::temp_directory_path() / ("hk-pass-" + std::to_string(::getpid()));
    fs::remove_all(store);
    fs::create_directories(store / "hostkeeper" / "deeper");
    CHECK_FALSE(gpg_id_file_for(store, store / "hostkeeper"));
    CHECK_FALSE(is_initialized(store));
    std::ofstream(store / ".gpg-id") << "root\n";
    CHECK(gpg_id_file_for(store, store / "hostkeeper") == store / ".gpg-id");
    CHECK(is_initialized(store));
    std::ofstream(store / "hostkeeper" / ".gpg-id") << "team\n";
    CHECK(gpg_id_file_for(store, store / "hostkeeper") == store / "hostkeeper" / ".gpg-id");
    CHECK(gpg_id_file_for(store, store / "hostkeeper" / "deeper") ==
          store / "hostkeeper" / ".gpg-id");
    // Never above the store: a .gpg-id in its parent does not count.
    const fs::path inner = store / "inner-store";
    fs::create_directories(inner / "hostkeeper");
    CHECK_FALSE(gpg_id_file_for(inner, inner / "hostkeeper"));
    fs::remove_all(store);
}

TEST_CASE("PASSWORD_STORE_GPG_OPTS: what GPGME can pass on, and the rest named", "[daemon][pass]") {
    const GpgOptions o =
        parse_gpg_options("--armor --trust-model always --homedir /h --cipher-algo AES256");
    CHECK(o.armor);
    CHECK(o.trust_model == "always");
    CHECK(o.homedir == "/h");
    CHECK(o.ignored == std::vector<std::string>{"--cipher-algo", "AES256"});
    const GpgOptions joined = parse_gpg_options("--trust-model=tofu --homedir=/g -a");
    CHECK(joined.trust_model == "tofu");
    CHECK(joined.homedir == "/g");
    CHECK(joined.armor);
    CHECK(parse_gpg_options("--always-trust").trust_model == "always");
    CHECK(parse_gpg_options("").ignored.empty());
    // A dangling option is not taken as set.
    const GpgOptions dangling = parse_gpg_options("--trust-model");
    CHECK_FALSE(dangling.trust_model);
    CHECK(dangling.ignored == std::vector<std::string>{"--trust-model"});
}

TEST_CASE("entry text: JSON objects whole, anything else its first line", "[daemon][pass]") {
    CHECK(entry_text("{\"token\":\"t\"}\n").view() == "{\"token\":\"t\"}");
    CHECK(entry_text("{\n  \"token\": \"t\"\n}\n\n").view() == "{\n  \"token\": \"t\"\n}");
    CHECK(entry_text("bare-token\nuser: me\nurl: x\n").view() == "bare-token");
    CHECK(entry_text("bare-token\r\n").view() == "bare-token");
    CHECK(entry_text("").view().empty());
}
