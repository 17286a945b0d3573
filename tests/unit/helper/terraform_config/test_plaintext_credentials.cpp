// credentials.tfrc.json: import's rewrite against the file as it is when
// written, not as it was first read; symlinks rewritten at their target.
#include <catch2/catch.hpp>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <string>

#include "helper/terraform_config/plaintext_credentials.hpp"
#include "proto/file_io.hpp"

namespace test_plaintext_credentials {

using namespace hostkeeper::proto;
using namespace hostkeeper::helper::terraform_config;
namespace fs = std::filesystem;

namespace {

struct World {
    World() {
        char pattern[] = "/tmp/hk-unit-plaintext.XXXXXX";
        root = ::mkdtemp(pattern);
    }
    ~World() { fs::remove_all(root); }
    fs::path root;
};

}  // namespace

namespace {

using hostkeeper::proto::Json;

std::string slurp(const fs::path& path) {
    std::ifstream in(path, std::ios::binary);
    return std::string(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
}

void put(const fs::path& path, const std::string& text) {
    fs::create_directories(path.parent_path());
    std::ofstream(path, std::ios::binary | std::ios::trunc) << text;
}

// What import stored and verified, from the first read of the file.
std::map<std::string, Json> stored_from(const CredentialsFile& first) {
    std::map<std::string, Json> stored;
    for (const auto& host : first.hosts()) stored[host] = first.credentials(host);
    return stored;
}

}  // namespace

TEST_CASE("the rewrite keeps what was written to credentials.tfrc.json after it was first read",
          "[helper][plaintext_credentials]") {
    World w;
    const fs::path path = w.root / "credentials.tfrc.json";
    put(path,
        R"({"credentials":{"a.example.com":{"token":"tok-a"},"b.example.com":{"token":"tok-b"}}})");
    const auto stored = stored_from(CredentialsFile(path));

    // Meanwhile: terraform login changed b, added c; someone added a top-level key.
    put(path,
        R"({"credentials":{"a.example.com":{"token":"tok-a"},"b.example.com":{"token":"tok-b2"},
                 "c.example.com":{"token":"tok-c"}},"extra":true})");
    const auto result = CredentialsFile(path).rewrite_without(stored);
    CHECK_FALSE(result.removed_file);
    CHECK(result.removed_hosts == 1);
    CHECK(result.left_hosts == 2);
    CHECK(result.changed == std::vector<std::string>{"b.example.com"});
    const Json rest = Json::parse(slurp(path));
    CHECK_FALSE(rest["credentials"].contains("a.example.com"));
    CHECK(rest["credentials"]["b.example.com"]["token"] == "tok-b2");
    CHECK(rest["credentials"]["c.example.com"]["token"] == "tok-c");
    CHECK(rest["extra"] == true);
}

TEST_CASE("the rewrite touches nothing when no stored host is in the file as it was",
          "[helper][plaintext_credentials]") {
    World w;
    const fs::path path = w.root / "credentials.tfrc.json";
    put(path, R"({"credentials":{"a.example.com":{"token":"tok-a"}}})");
    const auto stored = stored_from(CredentialsFile(path));
    const std::string changed = R"({"credentials":{"a.example.com":{"token":"tok-new"}}})";
    put(path, changed);
    const auto result = CredentialsFile(path).rewrite_without(stored);
    CHECK(result.removed_hosts == 0);
    CHECK(result.changed == std::vector<std::string>{"a.example.com"});
    CHECK(slurp(path) == changed);

    put(path, R"({"credentials":{"a.example.com":{"token":"tok-a"})");  // malformed now
    CHECK_THROWS_AS(CredentialsFile(path), FileError);
}

TEST_CASE("the rewrite never removes a symlink: its target is rewritten",
          "[helper][plaintext_credentials]") {
    World w;
    const fs::path target = w.root / "dotfiles" / "creds.json";
    const fs::path link = w.root / "credentials.tfrc.json";
    put(target, R"({"credentials":{"a.example.com":{"token":"tok-a"}}})");
    fs::create_symlink(target, link);
    const auto stored = stored_from(CredentialsFile(link));
    const auto result = CredentialsFile(link).rewrite_without(stored);
    CHECK_FALSE(result.removed_file);
    CHECK(result.removed_hosts == 1);
    REQUIRE(fs::is_symlink(link));
    CHECK(Json::parse(slurp(target))["credentials"] == Json::object());

    // A regular file with nothing left is removed.
    const fs::path plain = w.root / "plain.json";
    put(plain, R"({"credentials":{"a.example.com":{"token":"tok-a"}}})");
    CHECK(CredentialsFile(plain).rewrite_without(stored).removed_file);
    CHECK_FALSE(fs::exists(plain));
}

// Found by tests/fuzz/fuzz_credentials_file (its corpus keeps the input): a
// number past a double's range made nlohmann/json throw out_of_range, not
// parse_error, which escaped as an unexplained exception (doctor's report
// stopped there) and quoted the file's text.
TEST_CASE("a credentials file with a number out of range is refused as not valid JSON",
          "[helper][plaintext_credentials]") {
    World w;
    const fs::path path = w.root / "credentials.tfrc.json";
    for (const std::string text :
         {"9E990", R"({"credentials":{"a.example.com":{"token":"tok-a","expires":-1e999}}})"}) {
        put(path, text);
        try {
            CredentialsFile file(path);
            FAIL("accepted " << text);
        } catch (const FileError& e) {
            const std::string what = e.what();
            CHECK(what ==
                  path.string() +
                      " is not valid JSON (a number is out of range); it was left as it is");
            CHECK(what.find("tok-a") == std::string::npos);
        }
        CHECK_THROWS_AS(CredentialsFile("credentials.tfrc.json", text), FileError);
        CHECK(slurp(path) == text);
    }
}

}  // namespace test_plaintext_credentials
