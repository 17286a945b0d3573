// daemon/pass/store_layout, gpg_options and entry_text: pass's rules; and
// that no symbolic link in a store is followed, on real folders (every case
// here is refused or listed before gpg would be run).
#include <sys/stat.h>
#include <unistd.h>

#include <catch2/catch.hpp>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "daemon/credentials/docker_items.hpp"
#include "daemon/credentials/terraform_items.hpp"
#include "daemon/pass/gpg_options.hpp"
#include "daemon/pass/pass_keyring.hpp"
#include "daemon/pass/store_layout.hpp"
#include "proto/error.hpp"

namespace test_store_layout {

using namespace hostkeeper::daemon::pass;
using hostkeeper::daemon::credentials::ItemKind;
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
    CHECK(entry_name(ItemKind::docker, "reg.example:5000") ==
          "hostkeeper/docker/cmVnLmV4YW1wbGU6NTAwMA");
    CHECK(key_of_entry_file(ItemKind::docker, "cmVnLmV4YW1wbGU6NTAwMA.gpg") == "reg.example:5000");
    // '/' and '+' of base64 are '_' and '-': any URL is one file name.
    const std::string hub = "https://index.docker.io/v1/";
    const std::string name = entry_name(ItemKind::docker, hub);
    CHECK(name.find('/', std::string("hostkeeper/docker/").size()) == std::string::npos);
    CHECK(key_of_entry_file(ItemKind::docker, name.substr(name.rfind('/') + 1) + ".gpg") == hub);
    for (const std::string server : {"a", "ab", "abc", "abcd", "h\xc3\xbc.example/x?y=~~~"}) {
        const std::string n = entry_name(ItemKind::docker, server);
        CHECK(key_of_entry_file(ItemKind::docker, n.substr(n.rfind('/') + 1) + ".gpg") == server);
    }
    // Too long for a file name: a clear refusal, not a truncated name.
    CHECK_NOTHROW(entry_name(ItemKind::docker, std::string(188, 'x')));
    CHECK_THROWS_WITH(entry_name(ItemKind::docker, std::string(189, 'x')),
                      Catch::Contains("too long for a pass entry name"));
    // Not hostkeeper's names.
    CHECK_FALSE(key_of_entry_file(ItemKind::docker, "cmVnLmV4YW1wbGU6NTAwMA=.gpg"));  // padded
    CHECK_FALSE(key_of_entry_file(ItemKind::docker, "cmVn+.gpg"));
    CHECK_FALSE(key_of_entry_file(ItemKind::docker, "YQ"));       // no .gpg
    CHECK_FALSE(key_of_entry_file(ItemKind::docker, "Y.gpg"));    // not base64 of anything
    CHECK_FALSE(key_of_entry_file(ItemKind::docker, "IA.gpg"));   // " ": not a server key
    CHECK_FALSE(key_of_entry_file(ItemKind::docker, "YQo.gpg"));  // "a\n": a control character
}

TEST_CASE("git entry names: the item's URL in unpadded base64url, and back; its text",
          "[daemon][pass][git]") {
    const std::string url = "https://alice@gitlab.example.com/group/net.git";
    const std::string name = entry_name(ItemKind::git, url);
    CHECK(name.rfind("hostkeeper/git/", 0) == 0);
    CHECK(name.find('/', std::string("hostkeeper/git/").size()) == std::string::npos);
    CHECK(key_of_entry_file(ItemKind::git, name.substr(name.rfind('/') + 1) + ".gpg") == url);
    // Only the keys hostkeeper writes: not a Docker server's, not another spelling.
    const std::string docker = entry_name(ItemKind::docker, "reg.example:5000");
    CHECK_FALSE(key_of_entry_file(ItemKind::git, docker.substr(docker.rfind('/') + 1) + ".gpg"));
    const std::string upper = entry_name(ItemKind::git, "https://alice@GitLab.example.com");
    CHECK_FALSE(key_of_entry_file(ItemKind::git, upper.substr(upper.rfind('/') + 1) + ".gpg"));
    CHECK_THROWS_WITH(entry_name(ItemKind::git, "https://u@h.example/" + std::string(200, 'p')),
                      Catch::Contains("too long for a pass entry name"));
    // The entry holds the item's JSON with its URL; read back, the URL is checked and dropped.
    const hostkeeper::daemon::credentials::StoredItem item{
        {ItemKind::git, url},
        "alice",
        hostkeeper::proto::Secret(std::string_view(R"({"password":"pw"})"))};
    const hostkeeper::proto::Secret text = entry_text_of(item);
    CHECK(text.view() == R"({"password":"pw","url":")" + url + "\"}");
    const auto back = entry_item("hostkeeper/git/X", {ItemKind::git, url}, text.view());
    CHECK(back.secret.view() == R"({"password":"pw"})");
    CHECK(back.username == "alice");
    CHECK_THROWS_WITH(
        entry_item("hostkeeper/git/X", {ItemKind::git, "https://bob@h.example"}, text.view()),
        Catch::Contains("another URL"));
    CHECK_THROWS_WITH(entry_item("hostkeeper/git/X", {ItemKind::git, url}, "just a password"),
                      Catch::Contains("hostkeeper/git/X does not hold a JSON object"));
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

namespace {

// A store with a .gpg-id and hostkeeper/ (as `pass init` leaves it, plus the
// folder), and a folder beside it: "outside" the store.
struct LinkWorld {
    fs::path root = fs::temp_directory_path() / ("hk-pass-links-" + std::to_string(::getpid()));
    fs::path store = root / "store";
    fs::path outside = root / "outside";
    LinkWorld() {
        fs::remove_all(root);
        fs::create_directories(store / "hostkeeper");
        fs::create_directories(outside);
        put(store / ".gpg-id", "0x0123456789ABCDEF\n");
    }
    ~LinkWorld() { fs::remove_all(root); }
    LinkWorld(const LinkWorld&) = delete;
    LinkWorld& operator=(const LinkWorld&) = delete;

    static void put(const fs::path& path, const std::string& text) {
        std::ofstream(path, std::ios::binary) << text;
    }
    static std::string bytes_of(const fs::path& path) {
        std::ifstream in(path, std::ios::binary);
        std::stringstream text;
        text << in.rdbuf();
        return text.str();
    }
};

// What `run` threw: its code and message (fails the test when nothing).
template <typename Run>
std::pair<hostkeeper::proto::ErrorCode, std::string> refusal(Run run) {
    try {
        run();
    } catch (const hostkeeper::proto::Error& e) {
        return {e.code(), e.what()};
    }
    FAIL("nothing was refused");
    return {};
}

bool is_link(const fs::path& path) {
    return fs::is_symlink(fs::symlink_status(path));
}

// The keyring's Terraform and Docker views.
hostkeeper::daemon::credentials::TerraformItems terraform(PassKeyring& keyring) {
    return hostkeeper::daemon::credentials::TerraformItems(keyring);
}
hostkeeper::daemon::credentials::DockerItems docker(PassKeyring& keyring) {
    return hostkeeper::daemon::credentials::DockerItems(keyring);
}

}  // namespace

using hostkeeper::proto::ErrorCode;
using hostkeeper::proto::Secret;

TEST_CASE("links: get for a host whose entry links to another host's entry is refused",
          "[daemon][pass][links]") {
    LinkWorld w;
    w.put(w.store / "hostkeeper" / "b.example.gpg", "B's entry\n");
    fs::create_symlink("b.example.gpg", w.store / "hostkeeper" / "a.example.gpg");
    PassKeyring keyring(w.store);
    const auto [code, message] = refusal([&] { (void)terraform(keyring).lookup("a.example"); });
    CHECK(code == ErrorCode::keyring_error);
    CHECK_THAT(message, Catch::Contains("the entry hostkeeper/a.example (" +
                                        (w.store / "hostkeeper" / "a.example.gpg").string() +
                                        ") is a symbolic link, which hostkeeper does not follow"));
    CHECK(keyring.used_keyids().empty());  // nothing was decrypted

    // A Docker entry alike.
    const std::string docker = entry_name(ItemKind::docker, "reg.example:5000");
    fs::create_directories(w.store / "hostkeeper" / "docker");
    fs::create_symlink("../b.example.gpg", w.store / (docker + ".gpg"));
    const auto [docker_code, docker_message] = refusal([&] {
        (void)hostkeeper::daemon::credentials::DockerItems(keyring).lookup("reg.example:5000");
    });
    CHECK(docker_code == ErrorCode::keyring_error);
    CHECK_THAT(docker_message,
               Catch::Contains("the entry " + docker) && Catch::Contains("is a symbolic link"));
}

TEST_CASE("links: store through a link to a file outside the store is refused, the file intact",
          "[daemon][pass][links]") {
    LinkWorld w;
    const fs::path target = w.outside / "precious";
    const std::string precious = "precious bytes\n\x01\x02";
    w.put(target, precious);
    const fs::path entry = w.store / "hostkeeper" / "c.example.gpg";
    fs::create_symlink(target, entry);
    PassKeyring keyring(w.store);
    const auto [code, message] = refusal(
        [&] { terraform(keyring).store("c.example", Secret(std::string("{\"token\":\"new\"}"))); });
    CHECK(code == ErrorCode::keyring_error);
    CHECK_THAT(message,
               Catch::Contains("the entry hostkeeper/c.example") &&
                   Catch::Contains("is a symbolic link, which hostkeeper does not follow"));
    CHECK(w.bytes_of(target) == precious);
    CHECK(is_link(entry));
    CHECK(fs::read_symlink(entry) == target);
    // Nothing left behind in the folder: only the link.
    CHECK(std::distance(fs::directory_iterator(w.store / "hostkeeper"), fs::directory_iterator()) ==
          1);
}

TEST_CASE("links: forget through a link is refused, the link and its target intact",
          "[daemon][pass][links]") {
    LinkWorld w;
    const fs::path target = w.outside / "kept.gpg";
    w.put(target, "kept\n");
    const fs::path entry = w.store / "hostkeeper" / "d.example.gpg";
    fs::create_symlink(target, entry);
    PassKeyring keyring(w.store);
    const auto [code, message] = refusal([&] { (void)terraform(keyring).remove("d.example"); });
    CHECK(code == ErrorCode::keyring_error);
    CHECK_THAT(message, Catch::Contains("the entry hostkeeper/d.example") &&
                            Catch::Contains("is a symbolic link"));
    CHECK(is_link(entry));
    CHECK(w.bytes_of(target) == "kept\n");
    // A host without an entry is still simply not there.
    CHECK_FALSE(terraform(keyring).remove("none.example"));
}

TEST_CASE("links: a hostkeeper/ or hostkeeper/docker/ folder that is a link is refused",
          "[daemon][pass][links]") {
    LinkWorld w;
    fs::remove(w.store / "hostkeeper");
    w.put(w.outside / "e.example.gpg", "an entry outside\n");
    fs::create_symlink(w.outside, w.store / "hostkeeper");
    PassKeyring keyring(w.store);
    const std::string folder_link = "the folder " + (w.store / "hostkeeper").string() +
                                    " is a symbolic link, which hostkeeper does not follow";
    CHECK_THAT(refusal([&] { (void)terraform(keyring).lookup("e.example"); }).second,
               Catch::Contains("hostkeeper/e.example: " + folder_link));
    CHECK_THAT(refusal([&] {
                   terraform(keyring).store("f.example", Secret(std::string("{\"token\":\"t\"}")));
               }).second,
               Catch::Contains("hostkeeper/f.example: " + folder_link));
    CHECK_FALSE(fs::exists(fs::symlink_status(w.outside / "f.example.gpg")));
    CHECK_THAT(refusal([&] { (void)terraform(keyring).remove("e.example"); }).second,
               Catch::Contains(folder_link));
    CHECK(w.bytes_of(w.outside / "e.example.gpg") == "an entry outside\n");
    CHECK_THAT(refusal([&] { (void)terraform(keyring).items(); }).second,
               Catch::Contains(folder_link));
    CHECK_THAT(refusal([&] { (void)terraform(keyring).hosts(); }).second,
               Catch::Contains(folder_link));
    CHECK_FALSE(store_writable(w.store));

    // docker/ inside a real hostkeeper/ folder.
    fs::remove(w.store / "hostkeeper");
    fs::create_directories(w.store / "hostkeeper");
    CHECK(store_writable(w.store));
    fs::create_symlink(w.outside, w.store / "hostkeeper" / "docker");
    const std::string docker_link =
        "the folder " + (w.store / "hostkeeper" / "docker").string() + " is a symbolic link";
    CHECK_THAT(refusal([&] { (void)docker(keyring).lookup("reg.example"); }).second,
               Catch::Contains(docker_link));
    CHECK_THAT(refusal([&] { (void)docker(keyring).remove("reg.example"); }).second,
               Catch::Contains(docker_link));
    CHECK_THAT(refusal([&] { (void)docker(keyring).items(); }).second,
               Catch::Contains(docker_link));
    // hostkeeper/ itself is fine: its listing has no entries.
    CHECK(terraform(keyring).items().empty());
}

TEST_CASE("links: listings leave out entries that are links", "[daemon][pass][links]") {
    LinkWorld w;
    w.put(w.store / "hostkeeper" / "a.example.gpg", "x");
    w.put(w.store / "hostkeeper" / "b.example_8443.gpg", "x");
    fs::create_symlink("a.example.gpg", w.store / "hostkeeper" / "linked.example.gpg");
    fs::create_symlink(w.outside / "gone.gpg", w.store / "hostkeeper" / "dangling.example.gpg");
    fs::create_directories(w.store / "hostkeeper" / "docker");
    fs::create_symlink("../a.example.gpg",
                       w.store / (entry_name(ItemKind::docker, "reg.example:5000") + ".gpg"));
    PassKeyring keyring(w.store);
    CHECK(terraform(keyring).hosts() == std::vector<std::string>{"a.example", "b.example:8443"});
    const auto items = terraform(keyring).items();
    REQUIRE(items.size() == 2);
    CHECK(items[0].label == "hostkeeper/a.example");
    CHECK(items[0].stored.has_value());
    // The Docker folder holds only a link: no item, and nothing decrypted.
    CHECK(docker(keyring).items().empty());
    CHECK(keyring.used_keyids().empty());
}

TEST_CASE("store folders: opened and made without links, entries written in place",
          "[daemon][pass][links]") {
    LinkWorld w;
    // Missing folders: not made unless asked.
    const StoreFolder missing = open_store_folder(w.store, "hostkeeper/docker", std::nullopt);
    CHECK_FALSE(missing.fd.valid());
    CHECK_FALSE(read_entry_file(missing, "x.gpg", "hostkeeper/docker/x", 100));
    CHECK_FALSE(fs::exists(w.store / "hostkeeper" / "docker"));
    const StoreFolder made = open_store_folder(w.store, "hostkeeper/docker", 0700);
    REQUIRE(made.fd.valid());
    CHECK(made.path == w.store / "hostkeeper" / "docker");
    CHECK(made.name == "docker");
    CHECK((fs::status(made.path).permissions() & fs::perms::all) == fs::perms::owner_all);
    CHECK(entry_location("hostkeeper/docker/B64") ==
          std::pair<std::string, std::string>{"hostkeeper/docker", "B64.gpg"});
    CHECK(entry_location("hostkeeper/a.example") ==
          std::pair<std::string, std::string>{"hostkeeper", "a.example.gpg"});

    // Written, replaced with its mode, read back; no temporary file left.
    write_entry_file(made, "e.gpg", "hostkeeper/docker/e", "first", 0640);
    write_entry_file(made, "e.gpg", "hostkeeper/docker/e", "second", 0600);
    CHECK(read_entry_file(made, "e.gpg", "hostkeeper/docker/e", 100) == "second");
    struct stat st {};
    REQUIRE(::stat((made.path / "e.gpg").c_str(), &st) == 0);
    CHECK((st.st_mode & 07777) == 0600);
    CHECK(std::distance(fs::directory_iterator(made.path), fs::directory_iterator()) == 1);
    CHECK_THAT(
        refusal([&] { (void)read_entry_file(made, "e.gpg", "hostkeeper/docker/e", 3); }).second,
        Catch::Contains("larger than 3 bytes"));

    // A link at the name is refused for writing and reading alike.
    w.put(w.outside / "target", "outside");
    fs::create_symlink(w.outside / "target", made.path / "l.gpg");
    CHECK_THAT(refusal([&] {
                   write_entry_file(made, "l.gpg", "hostkeeper/docker/l", "new", 0600);
               }).second,
               Catch::Contains("is a symbolic link"));
    CHECK_THAT(
        refusal([&] { (void)read_entry_file(made, "l.gpg", "hostkeeper/docker/l", 100); }).second,
        Catch::Contains("is a symbolic link"));
    CHECK(w.bytes_of(w.outside / "target") == "outside");

    // The folder goes with its last entry, not before.
    CHECK(remove_entry_file(made, "e.gpg", "hostkeeper/docker/e"));
    CHECK_FALSE(remove_entry_file(made, "e.gpg", "hostkeeper/docker/e"));
    remove_folder_if_empty(made);
    CHECK(fs::exists(made.path));  // the link is still in it
    fs::remove(made.path / "l.gpg");
    remove_folder_if_empty(made);
    CHECK_FALSE(fs::exists(made.path));

    // A file where a folder belongs.
    w.put(w.store / "hostkeeper" / "docker", "not a folder");
    CHECK_THAT(refusal([&] { (void)open_store_folder(w.store, "hostkeeper/docker", 0700); }).second,
               Catch::Contains((w.store / "hostkeeper" / "docker").string() + " is not a folder"));
}

}  // namespace test_store_layout
