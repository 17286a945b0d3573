// proto/git_credential: git's fields as both ends check them, and the item
// key "https://USER@HOST[/PATH]" built and parsed back.
#include <catch2/catch.hpp>
#include <string>

#include "proto/error.hpp"
#include "proto/git_credential.hpp"

namespace test_git_credential {

namespace proto = hostkeeper::proto;
using proto::GitItemKey;

namespace {

std::string code_of(void (*f)()) {
    try {
        f();
    } catch (const proto::Error& e) {
        return std::string(proto::to_string(e.code()));
    }
    return "none";
}

}  // namespace

TEST_CASE("git fields: https only, hosts normalized, paths and usernames bounded", "[proto][git]") {
    proto::check_git_protocol("https");
    CHECK(code_of([] { proto::check_git_protocol("http"); }) == "bad_request");
    CHECK(code_of([] { proto::check_git_protocol("ssh"); }) == "bad_request");
    CHECK_THROWS_WITH(proto::check_git_protocol("HTTP"),
                      Catch::Contains("git credentials are only kept for https"));
    CHECK(proto::git_host("GitLab.Example.COM:443") == "gitlab.example.com");
    CHECK(proto::git_host("git.example:8443") == "git.example:8443");
    CHECK(code_of([] { (void)proto::git_host("bad host"); }) == "bad_host");
    CHECK(code_of([] { (void)proto::git_host(""); }) == "bad_host");
    CHECK(proto::git_path("/group/net.git") == "group/net.git");
    CHECK(proto::git_path("//a b/@c%") == "a b/@c%");
    CHECK(proto::git_path("").empty());
    CHECK(proto::git_path(std::string(proto::kMaxGitPathSize, 'p')).size() ==
          proto::kMaxGitPathSize);
    CHECK(code_of([] { (void)proto::git_path(std::string(proto::kMaxGitPathSize + 1, 'p')); }) ==
          "bad_request");
    CHECK(code_of([] { (void)proto::git_path("a\nb"); }) == "bad_request");
    CHECK(proto::git_username("alice@corp") == "alice@corp");
    CHECK(code_of([] { (void)proto::git_username("al\tice"); }) == "bad_request");
    CHECK(code_of([] {
              (void)proto::git_username(std::string(proto::kMaxGitUsernameSize + 1, 'u'));
          }) == "bad_request");
}

TEST_CASE("git passwords and expiry", "[proto][git]") {
    proto::check_git_password("glpat-x y");
    proto::check_git_password("");  // a single-sign-on credential's
    CHECK(code_of([] { proto::check_git_password("a\nb"); }) == "bad_request");
    CHECK(code_of([] { proto::check_git_password("a\rb"); }) == "bad_request");
    CHECK(code_of([] { proto::check_git_password(std::string("a\0b", 3)); }) == "bad_request");
    CHECK(code_of([] {
              proto::check_git_password(std::string(proto::kMaxGitPasswordSize + 1, 'x'));
          }) == "bad_request");
    CHECK(proto::parse_git_expiry("1767225600") == 1767225600U);
    CHECK(proto::parse_git_expiry("0") == 0U);
    CHECK_FALSE(proto::parse_git_expiry(""));
    CHECK_FALSE(proto::parse_git_expiry("-1"));
    CHECK_FALSE(proto::parse_git_expiry("12a"));
    CHECK_FALSE(proto::parse_git_expiry("99999999999999999999999"));
}

TEST_CASE("git item keys: the URL git would write, and back", "[proto][git]") {
    const GitItemKey full{"gitlab.example.com", "group/net.git", "alice"};
    CHECK(proto::git_item_key(full) == "https://alice@gitlab.example.com/group/net.git");
    CHECK(proto::git_item_url(full) == "https://gitlab.example.com/group/net.git");
    CHECK(proto::parse_git_item_key("https://alice@gitlab.example.com/group/net.git") == full);
    const GitItemKey no_path{"git.example:8443", "", "bob"};
    CHECK(proto::git_item_key(no_path) == "https://bob@git.example:8443");
    CHECK(proto::parse_git_item_key("https://bob@git.example:8443") == no_path);
    // Usernames are percent-encoded: '@', ':', '/' and every other byte but
    // the unreserved ones.
    const GitItemKey odd{"h.example", "a@b/c", "me@corp.example:x/y ü"};
    const std::string key = proto::git_item_key(odd);
    CHECK(key == "https://me%40corp.example%3Ax%2Fy%20%C3%BC@h.example/a@b/c");
    CHECK(proto::parse_git_item_key(key) == odd);
    CHECK(proto::percent_encode_username("a-b.c_d~e") == "a-b.c_d~e");
}

TEST_CASE("git item keys: only what git_item_key writes parses", "[proto][git]") {
    for (const char* bad :
         {"", "http://a@h.example", "https://", "https://a@", "https://a@H.example",
          "https://a@h.example:443", "https://a@h.example/", "https://a@h.example//p",
          "https://a%4@h.example", "https://a%4g@h.example", "https://%61@h.example",
          "https://a%2f@h.example", "https://@h.example", "https://a b@h.example",
          "https://a@h.example/p\nq", "https://a@bad host"}) {
        INFO(bad);
        CHECK_FALSE(proto::parse_git_item_key(bad));
    }
    // An item key may have no username (a request's pattern).
    CHECK(proto::parse_git_item_key("https://h.example/p") == GitItemKey{"h.example", "p", ""});
}

}  // namespace test_git_credential
