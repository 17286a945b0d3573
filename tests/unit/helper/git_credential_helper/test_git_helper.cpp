// git-credential-hostkeeper: git's credential lines read and written as git
// reads and writes them (url= taken apart as credential_from_url does), and
// the whole helper against a stand-in hostkeeperd: the request sent, stdout,
// stderr, the exit status, and that other protocols never reach the daemon.
#include <sys/mman.h>
#include <unistd.h>

#include <catch2/catch.hpp>
#include <functional>
#include <string>
#include <vector>

#include "fake_daemon.hpp"
#include "helper/client/standard_streams.hpp"
#include "helper/git_credential_helper/git_credentials.hpp"
#include "helper/git_credential_helper/git_helper.hpp"
#include "proto/error.hpp"
#include "proto/messages.hpp"
#include "proto/version.hpp"

namespace test_git_helper {

namespace git = hostkeeper::helper::git_credential_helper;
namespace proto = hostkeeper::proto;
using hk_unit::FakeDaemon;
using proto::Json;

namespace {

int memfd_with(const std::string& text) {
    const int fd = ::memfd_create("in", MFD_CLOEXEC);
    hostkeeper::helper::client::write_all_output(fd, text);
    ::lseek(fd, 0, SEEK_SET);
    return fd;
}

std::string slurp(int fd) {
    std::string text;
    char buffer[4096];
    ::lseek(fd, 0, SEEK_SET);
    for (ssize_t n = 0; (n = ::read(fd, buffer, sizeof buffer)) > 0;)
        text.append(buffer, static_cast<std::size_t>(n));
    ::close(fd);
    return text;
}

struct Result {
    int status = -1;
    std::string out, err;
};

// The helper run with `args`, `stdin_text` on its standard input.
Result run_helper(const std::vector<std::string>& args, const std::string& stdin_text,
                  const hostkeeper::helper::client::ClientOptions& options) {
    const int in = memfd_with(stdin_text);
    const int out = ::memfd_create("out", MFD_CLOEXEC), err = ::memfd_create("err", MFD_CLOEXEC);
    Result result;
    result.status = git::run(args, in, out, err, options);
    ::close(in);
    result.out = slurp(out);
    result.err = slurp(err);
    return result;
}

std::string message_of(const std::function<void()>& body) {
    try {
        body();
    } catch (const proto::Error& e) {
        return e.what();
    }
    return "(no error)";
}

Json found(const std::string& username, const std::string& password) {
    Json reply = proto::make_ok();
    reply["found"] = true;
    reply["source"] = "terraform";
    reply["username"] = username;
    reply["password"] = password;
    return reply;
}

}  // namespace

TEST_CASE("git credential input: key=value lines up to an empty line", "[git-helper]") {
    const git::GitCredential c = git::parse_credential(
        "capability[]=authtype\ncapability[]=state\nprotocol=https\r\nhost=git.example.com:8443\n"
        "path=group/net.git\nusername=alice\npassword=s3cret=with=equals\n"
        "password_expiry_utc=1767225600\noauth_refresh_token=refresh\nwwwauth[]=Basic "
        "realm=\"x\"\nauthtype=\nephemeral=1\nstate[]=a\ncontinue=1\nquit=0\nnew_key=later\n"
        "\nhost=after-the-end.example\n");
    CHECK(c.protocol == "https");
    CHECK(c.host == "git.example.com:8443");
    CHECK(c.path == "group/net.git");
    CHECK(c.username == "alice");
    REQUIRE(c.password);
    CHECK(c.password->view() == "s3cret=with=equals");
    CHECK(c.password_expiry_utc == 1767225600U);
    REQUIRE(c.oauth_refresh_token);
    CHECK(c.oauth_refresh_token->view() == "refresh");

    // A later line replaces an earlier one; no final newline; empty input.
    const git::GitCredential d = git::parse_credential("host=a.example\nhost=b.example");
    CHECK(d.host == "b.example");
    CHECK(d.protocol.empty());
    CHECK_FALSE(d.password);
    CHECK(git::parse_credential("").host.empty());
}

TEST_CASE("git credential input: url= taken apart as git does", "[git-helper]") {
    git::GitCredential c = git::parse_credential(
        "host=dropped.example\nurl=https://al%69ce:p%40ss@Git.Example.com:8443//group/net.git//\n");
    CHECK(c.protocol == "https");
    CHECK(c.host == "Git.Example.com:8443");
    CHECK(c.username == "alice");
    REQUIRE(c.password);
    CHECK(c.password->view() == "p@ss");
    CHECK(c.path == "group/net.git");

    c = git::parse_credential("url=https://git.example.com\n");
    CHECK(c.host == "git.example.com");
    CHECK(c.path.empty());
    CHECK_FALSE(c.username);
    // The lines after url= still apply.
    c = git::parse_credential("url=http://bob@h.example/x?y#z\nusername=carol\n");
    CHECK(c.protocol == "http");
    CHECK(c.host == "h.example");
    CHECK(c.path == "x?y#z");
    CHECK(c.username == "carol");
    // A "?" ends the host; an "@" after the host is the path's.
    c = git::parse_credential("url=https://h.example?user@x\n");
    CHECK(c.host == "h.example");
    CHECK_FALSE(c.username);
    CHECK(c.path == "?user@x");
    // A ":" after the "@" is the port's, not a password.
    c = git::parse_credential("url=https://dave@h.example:444/r\n");
    CHECK(c.username == "dave");
    CHECK_FALSE(c.password);
    CHECK(c.host == "h.example:444");
    // "%" without two hex digits stays.
    CHECK(git::parse_credential("url=https://h.example/a%2/b%zz%41\n").path == "a%2/b%zzA");
}

TEST_CASE("git credential input: clear errors that never show a value", "[git-helper]") {
    const auto parse = [](const std::string& text) {
        return message_of([&] { (void)git::parse_credential(text); });
    };
    CHECK(parse("protocol=https\nhunter2-secret\n") ==
          "line 2 of the credential on standard input is not key=value");
    CHECK(parse(std::string("protocol=https\npassword=a\0b\n", 28)) ==
          "the credential on standard input holds a NUL byte");
    CHECK(parse("password_expiry_utc=soon\n") ==
          "password_expiry_utc is not a decimal number of seconds since 1970");
    CHECK(parse("password_expiry_utc=-1\n").find("not a decimal number") != std::string::npos);
    CHECK(parse("password_expiry_utc=99999999999999999999999\n").find("not a decimal") !=
          std::string::npos);
    CHECK(parse("password_expiry_utc=\n").find("not a decimal") != std::string::npos);
    CHECK(parse("url=git.example.com/repo\n") == "the url= value has no scheme (PROTOCOL://)");
    CHECK(parse("url=://git.example.com\n") == "the url= value has no scheme (PROTOCOL://)");
    CHECK(parse("url=https://u:hunter2%0a@h.example/\n") ==
          "the url= value holds a line break or NUL in its password");
    CHECK(parse("url=https://h.example%0aevil/\n") ==
          "the url= value holds a line break or NUL in its host");
    CHECK(parse("url=https://h.example/a%00b\n") ==
          "the url= value holds a line break or NUL in its path");
}

TEST_CASE("git credential output: get's lines", "[git-helper]") {
    CHECK(git::format_answer("oauth2", "glpat-x", std::nullopt, std::nullopt) ==
          "username=oauth2\npassword=glpat-x\n");
    CHECK(git::format_answer("alice", "p=w", 1767225600U, std::string_view("r")) ==
          "username=alice\npassword=p=w\npassword_expiry_utc=1767225600\n"
          "oauth_refresh_token=r\n");
    CHECK(message_of([] { (void)git::format_answer("a", "x\ny", std::nullopt, std::nullopt); }) ==
          "the stored password holds a line break or NUL, which git's credential protocol "
          "cannot carry");
    CHECK(message_of([] {
              (void)git::format_answer("a\nb", "x", std::nullopt, std::nullopt);
          }).find("the stored username holds") == 0);
}

TEST_CASE("git helper: actions and arguments", "[git-helper]") {
    const auto idle = hk_unit::fake_client_options();  // nothing listens: no request can succeed
    Result r = run_helper({"--version"}, "", idle);
    CHECK(r.status == 0);
    CHECK(r.out == std::string("git-credential-hostkeeper ") + proto::product_version() + "\n");
    r = run_helper({"--help"}, "", idle);
    CHECK(r.status == 0);
    CHECK(r.out.rfind("Usage: git-credential-hostkeeper get|store|erase\n", 0) == 0);
    CHECK(r.out.find("git config --global credential.helper hostkeeper") != std::string::npos);
    // Unknown actions are git's to add: nothing, exit 0, and no daemon asked.
    for (const char* action : {"capability", "fill", "approve", "list", ""}) {
        r = run_helper({action}, "protocol=https\nhost=h.example\n", idle);
        CHECK(r.status == 0);
        CHECK(r.out.empty());
        CHECK(r.err.empty());
    }
    // Whatever its input: read and dropped, even past the limit.
    r = run_helper({"capability"}, std::string(std::size_t{70} * 1000, 'x'), idle);
    CHECK(r.status == 0);
    CHECK(r.err.empty());
    for (const std::vector<std::string>& args :
         {std::vector<std::string>{}, std::vector<std::string>{"get", "extra"}}) {
        r = run_helper(args, "", idle);
        CHECK(r.status == 1);
        CHECK(r.out.empty());
        CHECK(r.err ==
              "git-credential-hostkeeper: usage: git-credential-hostkeeper get|store|erase\n");
    }
}

TEST_CASE("git helper get: the daemon's answer as git's lines", "[git-helper]") {
    {
        const auto options = hk_unit::fake_client_options();
        FakeDaemon daemon(*options.socket, found("oauth2", "glpat-token"));
        const Result r = run_helper(
            {"get"}, "capability[]=authtype\nprotocol=https\nhost=git.example.com\n\n", options);
        CHECK(r.status == 0);
        CHECK(r.out == "username=oauth2\npassword=glpat-token\n");
        CHECK(r.err.empty());
        const Json request = daemon.request();
        CHECK(request.dump() ==
              R"({"v":1,"op":"git_get","protocol":"https","host":"git.example.com"})");
    }
    {
        Json reply = found("alice", "pw");
        reply["source"] = "git";
        reply["password_expiry_utc"] = 1767225600;
        reply["oauth_refresh_token"] = "refresh";
        const auto options = hk_unit::fake_client_options();
        FakeDaemon daemon(*options.socket, reply);
        const Result r = run_helper(
            {"get"}, "protocol=https\nhost=git.example.com:8443\npath=g/r.git\nusername=alice\n",
            options);
        CHECK(r.status == 0);
        CHECK(r.out ==
              "username=alice\npassword=pw\npassword_expiry_utc=1767225600\n"
              "oauth_refresh_token=refresh\n");
        const Json request = daemon.request();
        CHECK(request.at("host") == "git.example.com:8443");
        CHECK(request.at("path") == "g/r.git");
        CHECK(request.at("username") == "alice");
    }
    {
        // Nothing kept: nothing printed, exit 0 (git asks its next helper).
        Json reply = proto::make_ok();
        reply["found"] = false;
        const auto options = hk_unit::fake_client_options();
        FakeDaemon daemon(*options.socket, reply);
        const Result r = run_helper({"get"}, "url=https://nothing.example/repo.git\n", options);
        CHECK(r.status == 0);
        CHECK(r.out.empty());
        CHECK(r.err.empty());
        CHECK(daemon.request().at("path") == "repo.git");
    }
    {
        // A locked keyring is an error, never an empty answer.
        const auto options = hk_unit::fake_client_options();
        FakeDaemon daemon(*options.socket,
                          proto::make_error(proto::ErrorCode::keyring_locked,
                                            "the keyring is locked and was not unlocked in time"));
        const Result r = run_helper({"get"}, "protocol=https\nhost=h.example\n", options);
        CHECK(r.status == 1);
        CHECK(r.out.empty());
        CHECK(r.err ==
              "git-credential-hostkeeper: the keyring is locked and was not unlocked in time\n");
    }
    {
        // An answer git's lines cannot carry is refused whole.
        const auto options = hk_unit::fake_client_options();
        FakeDaemon daemon(*options.socket, found("oauth2", "two\nlines"));
        const Result r = run_helper({"get"}, "protocol=https\nhost=h.example\n", options);
        CHECK(r.status == 1);
        CHECK(r.out.empty());
        CHECK(r.err.find("holds a line break") != std::string::npos);
    }
    {
        Json reply = proto::make_ok();
        reply["found"] = true;
        reply["username"] = "oauth2";
        const auto options = hk_unit::fake_client_options();
        FakeDaemon daemon(*options.socket, reply);
        const Result r = run_helper({"get"}, "protocol=https\nhost=h.example\n", options);
        CHECK(r.status == 1);
        CHECK(r.err ==
              "git-credential-hostkeeper: hostkeeperd's git_get answer has no string "
              "\"password\"\n");
    }
}

TEST_CASE("git helper: only https with a host reaches the daemon", "[git-helper]") {
    // Nothing listens: asking would fail with "hostkeeperd is not running".
    const auto idle = hk_unit::fake_client_options();
    for (const char* action : {"get", "store", "erase"}) {
        for (const char* input :
             {"protocol=http\nhost=h.example\nusername=u\npassword=p\n",
              "protocol=ssh\nhost=h.example\nusername=u\npassword=p\n",
              "url=http://u:p@h.example/r.git\n", "protocol=HTTPS\nhost=h.example\n",
              "protocol=https\nusername=u\npassword=p\n", "host=h.example\n", ""}) {
            const Result r = run_helper({action}, input, idle);
            CHECK(r.status == 0);
            CHECK(r.out.empty());
            CHECK(r.err.empty());
        }
    }
    // And the failure when one is needed but none answers.
    const Result r = run_helper({"get"}, "protocol=https\nhost=h.example\n", idle);
    CHECK(r.status == 1);
    CHECK(r.err.rfind("git-credential-hostkeeper: ", 0) == 0);
    CHECK(r.err.find("hostkeeperd is not running") != std::string::npos);
}

TEST_CASE("git helper store and erase: the requests", "[git-helper]") {
    const auto idle = hk_unit::fake_client_options();
    {
        Json reply = proto::make_ok();
        reply["stored"] = true;
        const auto options = hk_unit::fake_client_options();
        FakeDaemon daemon(*options.socket, reply);
        const Result r = run_helper({"store"},
                                    "protocol=https\nhost=h.example\npath=g/r.git\nusername=al"
                                    "ice\npassword=pw\npassword_expiry_utc=1767225600\noauth_"
                                    "refresh_token=rt\ncapability[]=authtype\n",
                                    options);
        CHECK(r.status == 0);
        CHECK(r.out.empty());
        CHECK(r.err.empty());
        CHECK(daemon.request().dump() ==
              R"({"v":1,"op":"git_store","protocol":"https","host":"h.example","path":"g/r.git",)"
              R"("username":"alice","password":"pw","password_expiry_utc":1767225600,)"
              R"("oauth_refresh_token":"rt"})");
    }
    {
        // Our own answer given back: the daemon keeps nothing, and says why.
        Json reply = proto::make_ok();
        reply["stored"] = false;
        reply["reason"] = "terraform_token";
        const auto options = hk_unit::fake_client_options();
        FakeDaemon daemon(*options.socket, reply);
        const Result r = run_helper(
            {"store"}, "protocol=https\nhost=h.example\nusername=oauth2\npassword=tok\n", options);
        CHECK(r.status == 0);
        CHECK(r.out.empty());
        CHECK(daemon.request().size() == 6);  // v, op, protocol, host, username, password
    }
    // Without a username or a password there is nothing to keep: no request.
    for (const char* input : {"protocol=https\nhost=h.example\npassword=pw\n",
                              "protocol=https\nhost=h.example\nusername=u\n"}) {
        const Result r = run_helper({"store"}, input, idle);
        CHECK(r.status == 0);
        CHECK(r.err.empty());
    }
    // Empty ones, as a single-sign-on credential has, are kept as given.
    {
        Json reply = proto::make_ok();
        reply["stored"] = true;
        const auto options = hk_unit::fake_client_options();
        FakeDaemon daemon(*options.socket, reply);
        const Result r = run_helper(
            {"store"}, "protocol=https\nhost=sso.example\nusername=\npassword=\n", options);
        CHECK(r.status == 0);
        const Json request = daemon.request();
        CHECK(request.at("username") == "");
        CHECK(request.at("password") == "");
    }
    // Bad input: a clear error, no request.
    Result r =
        run_helper({"store"}, "protocol=https\nhost=h.example\nusername=u\npassword\n", idle);
    CHECK(r.status == 1);
    CHECK(r.err ==
          "git-credential-hostkeeper: line 4 of the credential on standard input is not "
          "key=value\n");
    r = run_helper({"store"},
                   "protocol=https\nhost=h.example\nusername=u\npassword=" +
                       std::string(std::size_t{70} * 1000, 'x') + "\n",
                   idle);
    CHECK(r.status == 1);
    CHECK(r.err == "git-credential-hostkeeper: the credential on standard input is over 64 KiB\n");
    r = run_helper(
        {"store"},
        "protocol=https\nhost=h.example\nusername=u\npassword=" + std::string(65480, 'x') + "\n",
        idle);
    CHECK(r.status == 1);
    CHECK(r.err.find("is over the frame limit") != std::string::npos);
    CHECK(r.err.find("; nothing was stored\n") != std::string::npos);
    CHECK(r.err.find("xxxx") == std::string::npos);

    for (const bool with_password : {false, true}) {
        Json reply = proto::make_ok();
        reply["erased"] = with_password ? 1 : 0;
        const auto options = hk_unit::fake_client_options();
        FakeDaemon daemon(*options.socket, reply);
        r = run_helper({"erase"},
                       std::string("protocol=https\nhost=h.example\nusername=u\n") +
                           (with_password ? "password=pw\n" : ""),
                       options);
        CHECK(r.status == 0);
        CHECK(r.out.empty());
        const Json request = daemon.request();
        CHECK(request.at("op") == "git_erase");
        CHECK(request.at("username") == "u");
        CHECK(request.contains("password") == with_password);
        CHECK_FALSE(request.contains("path"));
    }
}

TEST_CASE("git helper: bytes that are not UTF-8 are refused before the daemon is asked",
          "[git-helper]") {
    // Nothing listens: a request sent would fail with "hostkeeperd is not running".
    const auto idle = hk_unit::fake_client_options();
    const struct {
        const char* action;
        std::string input;
        const char* then;
    } cases[] = {
        {"get", "protocol=https\nhost=h.example\nusername=user\xff\n", ""},
        {"store", "protocol=https\nhost=h.example\nusername=u\npassword=caf\xe9\n",
         "; nothing was stored"},
        {"erase", "protocol=https\nhost=h.example\npath=r\xfe.git\n", "; nothing was erased"},
    };
    for (const auto& c : cases) {
        const Result r = run_helper({c.action}, c.input, idle);
        CAPTURE(c.action, r.err);
        CHECK(r.status == 1);
        CHECK(r.err == std::string("git-credential-hostkeeper: the credential holds bytes that are "
                                   "not UTF-8, which hostkeeper does not keep") +
                           c.then + "\n");
    }
}

}  // namespace test_git_helper
