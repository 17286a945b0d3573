// docker-credential-hostkeeper: the protocol's input and output as the
// upstream helpers read and write them, and the whole helper against a
// stand-in hostkeeperd: the request sent, stdout, the exit status, and that
// bad input never reaches the daemon.
#include <sys/mman.h>
#include <unistd.h>

#include <catch2/catch.hpp>
#include <string>
#include <vector>

#include "fake_daemon.hpp"
#include "helper/client/standard_streams.hpp"
#include "helper/docker_credential_helper/docker_credentials.hpp"
#include "helper/docker_credential_helper/docker_helper.hpp"
#include "proto/error.hpp"
#include "proto/messages.hpp"
#include "proto/version.hpp"

namespace test_docker_helper {

namespace docker = hostkeeper::helper::docker_credential_helper;
namespace proto = hostkeeper::proto;
using hk_unit::FakeDaemon;
using proto::Json;

namespace {

// A file descriptor reading `text` from its start.
struct Input {
    int fd;
    explicit Input(const std::string& text) : fd(::memfd_create("in", MFD_CLOEXEC)) {
        hostkeeper::helper::client::write_all_output(fd, text);
        ::lseek(fd, 0, SEEK_SET);
    }
    ~Input() { ::close(fd); }
    Input(const Input&) = delete;
    Input& operator=(const Input&) = delete;
};

struct Result {
    int status = -1;
    std::string out;
};

// The helper run with `args`, `stdin_text` on its standard input.
Result run_helper(const std::vector<std::string>& args, const std::string& stdin_text,
                  const hostkeeper::helper::client::ClientOptions& options) {
    const Input in(stdin_text);
    const int out = ::memfd_create("out", MFD_CLOEXEC);
    Result result;
    result.status = docker::run(args, in.fd, out, options);
    ::lseek(out, 0, SEEK_SET);
    char buffer[4096];
    for (ssize_t n = 0; (n = ::read(out, buffer, sizeof buffer)) > 0;)
        result.out.append(buffer, static_cast<std::size_t>(n));
    ::close(out);
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

}  // namespace

TEST_CASE("docker store input: the three members, as Go's encoding/json decodes them",
          "[docker-helper]") {
    auto c = docker::parse_store_input(
        R"({"ServerURL":"registry.example.com:5000","Username":"alice","Secret":"s3cret"})");
    CHECK(c.server == "registry.example.com:5000");
    CHECK(c.username == "alice");
    CHECK(c.secret.view() == "s3cret");

    // Any letter case; a later member replaces an earlier one; null leaves it;
    // other members are ignored; blanks around the server URL are dropped.
    c = docker::parse_store_input(
        "{\"serverurl\":\" https://index.docker.io/v1/ "
        "\",\"USERNAME\":\"bob\",\"username\":\"carol\","
        "\"secret\":\"one\",\"Secret\":null,\"Email\":\"x@example.com\",\"Extra\":[1,2]}\n");
    CHECK(c.server == "https://index.docker.io/v1/");
    CHECK(c.username == "carol");
    CHECK(c.secret.view() == "one");

    // U+017F (long s) folds to s, as in Go's bytes.EqualFold.
    c = docker::parse_store_input(
        "{\"\xC5\xBF"
        "erverURL\":\"r.example\",\"Username\":\"u\"}");
    CHECK(c.server == "r.example");
    CHECK(c.secret.view().empty());  // no Secret: an empty one, as upstream stores it
}

TEST_CASE("docker store input: the exact lines clients recognise, and clear errors",
          "[docker-helper]") {
    const auto parse = [](const std::string& text) {
        return message_of([&] { (void)docker::parse_store_input(text); });
    };
    CHECK(parse(R"({"Username":"alice","Secret":"s"})") == docker::kMissingServerURL);
    CHECK(parse(R"({"ServerURL":"","Username":"alice","Secret":"s"})") ==
          docker::kMissingServerURL);
    CHECK(parse(R"({"ServerURL":" \t ","Username":"alice","Secret":"s"})") ==
          docker::kMissingServerURL);
    CHECK(parse(R"({"ServerURL":"r.example","Secret":"s"})") == docker::kMissingUsername);
    CHECK(parse(R"({"ServerURL":"r.example","Username":"","Secret":"s"})") ==
          docker::kMissingUsername);

    const std::string truncated = R"({"ServerURL":"r.example","Username":"a","Secret":)";
    CHECK(parse(truncated) == "the credentials are not valid JSON (syntax error at byte " +
                                  std::to_string(truncated.size() + 1) + "); nothing was stored");
    CHECK(parse("").find("; nothing was stored") != std::string::npos);
    CHECK(parse(R"({"ServerURL":"r.example","Username":"a","Secret":"s"} trailing)")
              .find("nothing was stored") != std::string::npos);
    CHECK(parse(R"(["r.example","a","s"])") ==
          "the credentials must be a JSON object; nothing was stored");
    CHECK(parse(R"({"ServerURL":"r.example","Username":"a","Secret":42})") ==
          "the \"Secret\" property must be a string; nothing was stored");
    CHECK(parse(R"({"ServerURL":["r.example"],"Username":"a"})") ==
          "the \"ServerURL\" property must be a string; nothing was stored");
    CHECK(parse(R"({"ServerURL":"r.example\u0007x","Username":"a"})") ==
          "the server URL holds a control character; nothing was stored");
    CHECK(parse(R"({"ServerURL":"r.example","Username":")" + std::string(1025, 'u') + "\"}") ==
          "the username is over 1024 bytes; nothing was stored");
    CHECK(parse(R"({"ServerURL":")" + std::string(1025, 'r') + R"(","Username":"a"})") ==
          "the server URL is over 1024 bytes; nothing was stored");
    // The secret itself never appears in a message.
    CHECK(parse(R"({"ServerURL":"r.example","Username":"a","Secret":"hunter2-secret" ])")
              .find("hunter2") == std::string::npos);
}

TEST_CASE("docker get/erase input: the server URL, lines joined as bufio.Scanner reads them",
          "[docker-helper]") {
    CHECK(docker::parse_server_input("registry.example.com:5000") == "registry.example.com:5000");
    CHECK(docker::parse_server_input("  https://index.docker.io/v1/\n") ==
          "https://index.docker.io/v1/");
    CHECK(docker::parse_server_input("regis\r\ntry.example\r\n") == "registry.example");
    CHECK(docker::parse_server_input("r.example\r") == "r.example");
    CHECK(message_of([] { (void)docker::parse_server_input(""); }) == docker::kMissingServerURL);
    CHECK(message_of([] { (void)docker::parse_server_input(" \n\r\n\t"); }) ==
          docker::kMissingServerURL);
    CHECK(message_of([] { (void)docker::parse_server_input("a\x01b"); }) ==
          "the server URL holds a control character");
}

TEST_CASE("docker get/list output: the bytes Go's json.Encoder writes", "[docker-helper]") {
    CHECK(docker::format_credentials("r.example:5000", "alice", "s3cret") ==
          "{\"ServerURL\":\"r.example:5000\",\"Username\":\"alice\",\"Secret\":\"s3cret\"}\n");
    // HTML characters, quotes, control characters, U+2028/9, bytes that are not UTF-8.
    CHECK(docker::format_credentials("a<b>&c", "q\"\\", "\b\f\n\r\t\x01\x7f") ==
          "{\"ServerURL\":\"a\\u003cb\\u003e\\u0026c\",\"Username\":\"q\\\"\\\\\","
          "\"Secret\":\"\\b\\f\\n\\r\\t\\u0001\x7f\"}\n");
    CHECK(docker::format_credentials("\xE2\x80\xA8\xE2\x80\xA9", "\xC3\xA9\xF0\x9F\x90\xB3",
                                     "\xFF\xC3\x28\xED\xA0\x80") ==
          "{\"ServerURL\":\"\\u2028\\u2029\",\"Username\":\"\xC3\xA9\xF0\x9F\x90\xB3\","
          "\"Secret\":\"\\ufffd\\ufffd(\\ufffd\\ufffd\\ufffd\"}\n");

    CHECK(docker::format_list(Json::object()) == "{}\n");
    CHECK(docker::format_list(Json{{"z.example", "zed"},
                                   {"a.example:5000", "al"},
                                   {"https://index.docker.io/v1/", "<me>"}}) ==
          "{\"a.example:5000\":\"al\",\"https://index.docker.io/v1/\":\"\\u003cme\\u003e\","
          "\"z.example\":\"zed\"}\n");
    CHECK_THROWS_AS(docker::format_list(Json{{"a", 1}}), proto::Error);
    CHECK_THROWS_AS(docker::format_list(Json()), proto::Error);
}

TEST_CASE("docker helper: arguments as credentials.Serve takes them", "[docker-helper]") {
    const auto options = hk_unit::fake_client_options();  // nothing listens: no request can succeed
    const std::string usage =
        "Usage: docker-credential-hostkeeper <store|get|erase|list|version>\n";
    const std::string version =
        std::string("docker-credential-hostkeeper (hostkeeper) ") + proto::product_version() + "\n";
    for (const char* flag : {"version", "--version", "-v"}) {
        const Result r = run_helper({flag}, "", options);
        CHECK(r.status == 0);
        CHECK(r.out == version);
    }
    for (const char* flag : {"--help", "-h"}) {
        const Result r = run_helper({flag}, "", options);
        CHECK(r.status == 0);
        CHECK(r.out == usage);
    }
    Result r = run_helper({}, "", options);
    CHECK(r.status == 1);
    CHECK(r.out == usage);
    r = run_helper({"get", "extra"}, "", options);
    CHECK(r.status == 1);
    CHECK(r.out == usage);
    r = run_helper({"fetch"}, "r.example", options);
    CHECK(r.status == 1);
    CHECK(r.out == "docker-credential-hostkeeper: unknown action: fetch\n");
}

TEST_CASE("docker helper get: the stored credentials, or the not-found line", "[docker-helper]") {
    const auto idle = hk_unit::fake_client_options();  // nothing listens on it
    {
        Json reply = proto::make_ok();
        reply["found"] = true;
        reply["server"] = "registry.example.com:5000";
        reply["username"] = "alice";
        reply["secret"] = "s3cret";
        const auto options = hk_unit::fake_client_options();
        FakeDaemon daemon(*options.socket, reply);
        const Result r = run_helper({"get"}, " registry.example.com:5000\n", options);
        CHECK(r.status == 0);
        CHECK(r.out ==
              "{\"ServerURL\":\"registry.example.com:5000\",\"Username\":\"alice\",\"Secret\":"
              "\"s3cret\"}\n");
        const Json request = daemon.request();
        CHECK(request.at("op") == "docker_get");
        CHECK(request.at("server") == "registry.example.com:5000");
        CHECK(request.size() == 3);  // v, op, server
    }
    {
        // Not found (the daemon asked under both spellings): one request,
        // then the not-found line.
        Json reply = proto::make_ok();
        reply["found"] = false;
        const auto options = hk_unit::fake_client_options();
        FakeDaemon daemon(*options.socket, reply);
        const Result r = run_helper({"get"}, "other.example", options);
        CHECK(r.status == 1);
        CHECK(r.out == "credentials not found in native keychain\n");
        REQUIRE(daemon.requests().size() == 1);
        CHECK(daemon.requests()[0].at("server") == "other.example");
    }
    {
        // OpenTofu asks for https://HOST what podman login stored as HOST:
        // the daemon's answer names the item's server, ServerURL is the one
        // asked for.
        Json found = proto::make_ok();
        found["found"] = true;
        found["server"] = "registry.example.com:5000";
        found["username"] = "alice";
        found["secret"] = "s3cret";
        const auto options = hk_unit::fake_client_options();
        FakeDaemon daemon(*options.socket, found);
        const Result r = run_helper({"get"}, "https://registry.example.com:5000", options);
        CHECK(r.status == 0);
        CHECK(r.out ==
              "{\"ServerURL\":\"https://registry.example.com:5000\",\"Username\":\"alice\","
              "\"Secret\":\"s3cret\"}\n");
        REQUIRE(daemon.requests().size() == 1);
        CHECK(daemon.requests()[0].at("server") == "https://registry.example.com:5000");
    }
    {
        // A locked keyring is the daemon's error, never "not found".
        const auto options = hk_unit::fake_client_options();
        FakeDaemon daemon(*options.socket,
                          proto::make_error(proto::ErrorCode::keyring_locked,
                                            "the keyring is locked and was not unlocked in time"));
        const Result r = run_helper({"get"}, "r.example", options);
        CHECK(r.status == 1);
        CHECK(r.out == "the keyring is locked and was not unlocked in time\n");
    }
    {
        // An answer without the fields is a clear failure, not an empty secret.
        Json reply = proto::make_ok();
        reply["found"] = true;
        reply["username"] = "alice";
        const auto options = hk_unit::fake_client_options();
        FakeDaemon daemon(*options.socket, reply);
        const Result r = run_helper({"get"}, "r.example", options);
        CHECK(r.status == 1);
        CHECK(r.out == "hostkeeperd's docker_get answer has no string \"secret\"\n");
    }
    const Result r = run_helper({"get"}, "\n", idle);
    CHECK(r.status == 1);
    CHECK(r.out == "no credentials server URL\n");
}

TEST_CASE("docker helper store: one docker_store request, or nothing for bad input",
          "[docker-helper]") {
    const auto idle = hk_unit::fake_client_options();  // nothing listens on it
    {
        const auto options = hk_unit::fake_client_options();
        FakeDaemon daemon(*options.socket, proto::make_ok());
        const Result r = run_helper({"store"},
                                    "{\"ServerURL\":\"registry.example.com:5000\",\"Username\":"
                                    "\"alice\",\"Secret\":\"s3cret\"}\n",
                                    options);
        CHECK(r.status == 0);
        CHECK(r.out.empty());
        const Json request = daemon.request();
        CHECK(request.at("op") == "docker_store");
        CHECK(request.at("server") == "registry.example.com:5000");
        CHECK(request.at("username") == "alice");
        CHECK(request.at("secret") == "s3cret");
    }
    // Nothing listens now: each of these must fail before asking the daemon,
    // with its own message (asking would say that no daemon is running).
    Result r = run_helper({"store"},
                          "{\"ServerURL\":\"r.example\",\"Username\":\"a\",\"Secret\":\"" +
                              std::string(std::size_t{70} * 1000, 'x') + "\"}",
                          idle);
    CHECK(r.status == 1);
    CHECK(r.out == "the credentials on standard input are over 64 KiB; nothing was stored\n");
    r = run_helper({"store"}, "{\"ServerURL\":\"r.example\",\"Username\":\"a\",", idle);
    CHECK(r.status == 1);
    CHECK(r.out.rfind("the credentials are not valid JSON (syntax error at byte ", 0) == 0);
    CHECK(r.out.find("; nothing was stored\n") != std::string::npos);
    r = run_helper({"store"}, R"({"ServerURL":"","Username":"a","Secret":"s"})", idle);
    CHECK(r.status == 1);
    CHECK(r.out == "no credentials server URL\n");
    r = run_helper({"store"}, R"({"ServerURL":"r.example","Secret":"s"})", idle);
    CHECK(r.status == 1);
    CHECK(r.out == "no credentials username\n");
    // Under 64 KiB of input, but the request around it is over a frame:
    // refused before anything is sent.
    r = run_helper({"store"},
                   "{\"ServerURL\":\"r.example\",\"Username\":\"a\",\"Secret\":\"" +
                       std::string(65470, 'x') + "\"}",
                   idle);
    CHECK(r.status == 1);
    CHECK(r.out.find("is over the frame limit") != std::string::npos);
    CHECK(r.out.find("; nothing was stored\n") != std::string::npos);
}

TEST_CASE("docker helper store: 64 KiB of input exactly is read, one byte more is refused",
          "[docker-helper]") {
    const auto options = hk_unit::fake_client_options();
    const std::string head = "{\"ServerURL\":\"r.example\",\"Username\":\"a\",\"Secret\":\"";
    const std::size_t limit = hostkeeper::helper::client::kMaxHelperInput;
    const std::string fits = head + std::string(limit - head.size() - 2, 'x') + "\"}";
    REQUIRE(fits.size() == limit);
    // It is read and parsed; the request is then too large for a frame.
    Result r = run_helper({"store"}, fits, options);
    CHECK(r.status == 1);
    CHECK(r.out.find("is over the frame limit") != std::string::npos);
    r = run_helper({"store"}, fits + " ", options);
    CHECK(r.status == 1);
    CHECK(r.out == "the credentials on standard input are over 64 KiB; nothing was stored\n");
}

TEST_CASE("docker helper erase and list", "[docker-helper]") {
    const auto idle = hk_unit::fake_client_options();  // nothing listens on it
    for (const bool erased : {true, false}) {
        Json reply = proto::make_ok();
        reply["erased"] = erased;
        const auto options = hk_unit::fake_client_options();
        FakeDaemon daemon(*options.socket, reply);
        const Result r = run_helper({"erase"}, "registry.example.com:5000\n", options);
        // Nothing stored is success too, as with docker-credential-secretservice and -pass.
        CHECK(r.status == 0);
        CHECK(r.out.empty());
        CHECK(daemon.request().at("op") == "docker_erase");
        CHECK(daemon.request().at("server") == "registry.example.com:5000");
    }
    {
        Json reply = proto::make_ok();
        reply["servers"] = Json{{"z.example", "zed"}, {"a.example:5000", "al"}};
        const auto options = hk_unit::fake_client_options();
        FakeDaemon daemon(*options.socket, reply);
        const Result r = run_helper({"list"}, "unused", options);
        CHECK(r.status == 0);
        CHECK(r.out == "{\"a.example:5000\":\"al\",\"z.example\":\"zed\"}\n");
        CHECK(daemon.request().at("op") == "docker_list");
    }
    {
        const auto options = hk_unit::fake_client_options();
        FakeDaemon daemon(*options.socket, proto::make_error(proto::ErrorCode::unknown_op,
                                                             "unknown op docker_list"));
        const Result r = run_helper({"list"}, "", options);
        CHECK(r.status == 1);
        CHECK(r.out == "unknown op docker_list\n");
    }
    // No daemon: the client's message, on stdout, status 1.
    const Result r = run_helper({"list"}, "", idle);
    CHECK(r.status == 1);
    CHECK(r.out.find("hostkeeperd is not running") != std::string::npos);
}

}  // namespace test_docker_helper
