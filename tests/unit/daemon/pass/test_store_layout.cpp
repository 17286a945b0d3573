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
    // Found by fuzz_pass_store: a colon is not how hostkeeper writes a port.
    CHECK_FALSE(host_of_entry_file("l:31.gpg"));
}

TEST_CASE("Docker entry names: the server URL in unpadded base64url, and back", "[daemon][pass]") {
    CHECK(docker_entry_name("reg.example:5000") == "hostkeeper/docker/cmVnLmV4YW1wbGU6NTAwMA");
    CHECK(server_of_docker_entry_file("cmVnLmV4YW1wbGU6NTAwMA.gpg") == "reg.example:5000");
    // '/' and '+' of base64 are '_' and '-': any URL is one file name.
    const std::string hub = "https://index.docker.io/v1/";
    const std::string name = docker_entry_name(hub);
    CHECK(name.find('/', std::string("hostkeeper/docker/").size()) == std::string::npos);
    CHECK(server_of_docker_entry_file(name.substr(name.rfind('/') + 1) + ".gpg") == hub);
    for (const std::string server : {"a", "ab", "abc", "abcd", "h\xc3\xbc.example/x?y=~~~"}) {
        const std::string n = docker_entry_name(server);
        CHECK(server_of_docker_entry_file(n.substr(n.rfind('/') + 1) + ".gpg") == server);
    }
    // Too long for a file name: a clear refusal, not a truncated name.
    CHECK_NOTHROW(docker_entry_name(std::string(188, 'x')));
    CHECK_THROWS_WITH(docker_entry_name(std::string(189, 'x')),
                      Catch::Contains("too long for a pass entry name"));
    // Not hostkeeper's names.
    CHECK_FALSE(server_of_docker_entry_file("cmVnLmV4YW1wbGU6NTAwMA=.gpg"));  // padded
    CHECK_FALSE(server_of_docker_entry_file("cmVn+.gpg"));
    CHECK_FALSE(server_of_docker_entry_file("YQ"));       // no .gpg
    CHECK_FALSE(server_of_docker_entry_file("Y.gpg"));    // not base64 of anything
    CHECK_FALSE(server_of_docker_entry_file("IA.gpg"));   // " ": not a server key
    CHECK_FALSE(server_of_docker_entry_file("YQo.gpg"));  // "a\n": a control character
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
