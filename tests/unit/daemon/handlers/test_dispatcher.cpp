// The dispatcher and its request handlers behind a real socket, with an
// in-memory keyring: the wire protocol of the requests and their errors.
// (The socket alone is test_daemon_server; the real keyring and the real
// binaries are covered by the integration tests.)
#include <unistd.h>

#include <catch2/catch.hpp>
#include <chrono>
#include <filesystem>

#include "daemon/credentials/docker_items.hpp"
#include "daemon/credentials/git_items.hpp"
#include "dispatcher_fixture.hpp"
#include "socket_fixture.hpp"

namespace test_dispatcher {

using namespace hostkeeper;
using namespace std::chrono_literals;
namespace asio = boost::asio;
using test::RawClient;

namespace {

using ServerFixture = test::DispatcherFixture;

proto::Json get_request(const std::string& host) {
    proto::Json r = proto::make_request(proto::Op::get);
    r["host"] = host;
    return r;
}

}  // namespace

TEST_CASE("get, store and forget over the socket", "[daemon][server]") {
    ServerFixture f;
    CHECK(f.request(get_request("h.example")).dump() == R"({"v":1,"ok":true,"found":false})");
    proto::Json store = proto::make_request(proto::Op::store);
    store["host"] = "H.Example:443";  // the daemon normalizes whatever the client sent
    store["credentials"] = {{"token", "secret-1"}, {"extra", {1, 2}}};
    CHECK(f.request(store).at("ok") == true);
    CHECK(f.keyring.text("h.example") == R"({"token":"secret-1","extra":[1,2]})");
    CHECK(f.request(get_request("h.example")).dump() ==
          R"({"v":1,"ok":true,"found":true,"credentials":{"token":"secret-1","extra":[1,2]}})");
    proto::Json forget = proto::make_request(proto::Op::forget);
    forget["host"] = "h.example";
    CHECK(f.request(forget).at("ok") == true);
    CHECK(f.request(get_request("h.example")).at("found") == false);
}

TEST_CASE("many requests on one connection", "[daemon][server]") {
    ServerFixture f;
    f.keyring.put("h", R"({"token":"t"})");
    const RawClient client(f.location.socket);
    for (int i = 0; i < 100; ++i) {
        client.send_json(get_request("h"));
        const auto response = client.read_json();
        REQUIRE(response);
        REQUIRE(response->at("found") == true);
    }
    CHECK(f.keyring.lookups == 1);
}

TEST_CASE("malformed requests get a clear error and change nothing", "[daemon][server]") {
    ServerFixture f;
    f.keyring.put("h", R"({"token":"keep"})");
    const RawClient client(f.location.socket);
    const auto expect_error = [&](const std::string& payload, const std::string& code) {
        CAPTURE(payload);
        client.send_bytes(proto::encode_frame(payload));
        const auto response = client.read_json();
        REQUIRE(response);
        CHECK(response->at("ok") == false);
        CHECK(test::error_code_of(*response) == code);
    };
    expect_error("this is not json", "bad_request");
    expect_error(std::string("\xff\xfe\x00garbage", 10), "bad_request");
    expect_error("[1,2,3]", "bad_request");
    expect_error(R"({"op":"get","host":"h"})", "bad_request");          // no version
    expect_error(R"({"v":"1","op":"get","host":"h"})", "bad_request");  // version not an integer
    expect_error(R"({"v":1,"host":"h"})", "bad_request");               // no op
    expect_error(R"({"v":1,"op":"get"})", "bad_request");               // no host
    expect_error(R"({"v":1,"op":"get","host":7})", "bad_request");
    expect_error(R"({"v":1,"op":"get","host":"ex_ample.com"})", "bad_host");
    expect_error(R"({"v":1,"op":"get","host":"https://h"})", "bad_host");
    expect_error(R"({"v":1,"op":"explode","host":"h"})", "unknown_op");
    expect_error(R"({"v":1,"op":"store","host":"h"})", "bad_request");
    expect_error(R"({"v":1,"op":"store","host":"h","credentials":"tok"})", "bad_request");
    expect_error(R"({"v":1,"op":"store","host":"h","credentials":{"token":5}})", "bad_request");
    // The connection survived all of that, and the stored item is untouched.
    client.send_json(get_request("h"));
    const auto response = client.read_json();
    REQUIRE(response);
    CHECK(response->at("credentials").at("token") == "keep");
    CHECK(f.keyring.stores == 0);
}

TEST_CASE("another protocol version is refused with the supported list; stop and hello are frozen",
          "[daemon][server]") {
    ServerFixture f;
    proto::Json request = get_request("h");
    request["v"] = 2;
    const proto::Json refusal = f.request(request);
    CHECK(test::error_code_of(refusal) == "unsupported_version");
    CHECK(refusal.at("supported") == proto::Json::array({1}));

    proto::Json hello = proto::make_request(proto::Op::hello);
    hello["v"] = 99;
    const proto::Json answer = f.request(hello);
    CHECK(answer.at("ok") == true);
    CHECK(answer.at("supported") == proto::Json::array({1}));

    proto::Json stop = proto::make_request(proto::Op::stop);
    stop["v"] = 99;
    const proto::Json stopping = f.request(stop);
    CHECK(stopping.at("ok") == true);
    CHECK(stopping.at("pid") == ::getpid());
    // The server stops once the answer is written.
    CHECK(test::wait_for([&] { return f.stopped.load(); }));
    CHECK(f.stopping == 1);
}

TEST_CASE("migrate moves every item to the other backend and says so per host",
          "[daemon][server][backends]") {
    ServerFixture f;
    f.keyring.put("a.example", R"({"token":"ta"})");
    f.keyring.put("b.example", R"({"token":"tb"})");
    f.other_keyring.fail_store_of("b.example");
    CHECK(f.request(get_request("a.example"))["credentials"]["token"] == "ta");
    proto::Json migrate = proto::make_request(proto::Op::migrate);
    migrate["to"] = "pass";
    const proto::Json reply = f.request(migrate);
    CHECK(reply["ok"] == true);
    CHECK(reply["from"] == "secret-service");
    CHECK(reply["to"] == "pass");
    CHECK(reply["migrated"] == proto::Json::array());
    REQUIRE(reply["failed"].size() == 1);
    CHECK(reply["failed"][0]["host"] == "b.example");
    CHECK(reply["failed"][0]["code"] == "keyring_error");
    CHECK(reply["leftover"] == proto::Json::array());
    CHECK(reply["switched"] == false);
    // Nothing moved: still served from the source.
    CHECK(f.request(get_request("a.example"))["credentials"]["token"] == "ta");
    CHECK_FALSE(f.other_keyring.has("a.example"));

    f.other_keyring.fail_store_of(std::nullopt);
    const proto::Json moved = f.request(migrate);
    CHECK(moved["migrated"] == proto::Json::array({"a.example", "b.example"}));
    CHECK(moved["switched"] == true);
    CHECK(f.other_keyring.has("a.example"));
    CHECK_FALSE(f.keyring.has("b.example"));

    migrate["to"] = "keepassxc";
    CHECK(f.request(migrate)["error"]["code"] == "bad_request");
    CHECK(f.request(proto::make_request(proto::Op::migrate))["error"]["code"] == "bad_request");
}

TEST_CASE("migrate names Docker servers and git items in its reply as it names hosts",
          "[daemon][server][backends][docker][git]") {
    ServerFixture f;
    f.keyring.put("a.example", R"({"token":"ta"})");
    daemon::credentials::DockerItems(f.keyring).store(
        {"reg.example:5000", "alice", proto::Secret(std::string_view("s1"))});
    daemon::credentials::GitItems(f.keyring).store({{"g.example", "", "bob"},
                                                    proto::Secret(std::string_view("pw")),
                                                    std::nullopt,
                                                    std::nullopt});
    proto::Json migrate = proto::make_request(proto::Op::migrate);
    migrate["to"] = "pass";
    f.other_keyring.fail_store_of("reg.example:5000");
    const proto::Json failed = f.request(migrate);
    REQUIRE(failed["failed"].size() == 1);
    CHECK(failed["failed"][0] == proto::Json{{"server", "reg.example:5000"},
                                             {"code", "keyring_error"},
                                             {"message", failed["failed"][0]["message"]}});
    f.other_keyring.fail_store_of("https://bob@g.example");
    const proto::Json git_failed = f.request(migrate);
    REQUIRE(git_failed["failed"].size() == 1);
    CHECK(git_failed["failed"][0].begin().key() == "url");
    CHECK(git_failed["failed"][0]["url"] == "https://bob@g.example");

    f.other_keyring.fail_store_of(std::nullopt);
    const proto::Json moved = f.request(migrate);
    std::vector<std::string> members;
    for (const auto& member : moved.items()) members.push_back(member.key());
    CHECK(members == std::vector<std::string>{"v", "ok", "from", "to", "migrated",
                                              "docker_migrated", "git_migrated", "failed",
                                              "leftover", "switched"});
    CHECK(moved["migrated"] == proto::Json::array({"a.example"}));
    CHECK(moved["docker_migrated"] == proto::Json::array({"reg.example:5000"}));
    CHECK(moved["git_migrated"] == proto::Json::array({"https://bob@g.example"}));
    CHECK(moved["switched"] == true);
}

TEST_CASE("status says which keyring backend is used and why; unlock asks it",
          "[daemon][server][backends]") {
    ServerFixture f;
    const proto::Json status = f.request(proto::make_request(proto::Op::status));
    CHECK(status["keyring"]["backend"] == "secret-service");
    CHECK(status["keyring"]["configured"] == "auto");
    CHECK(status["keyring"]["reason"] == "test");
    CHECK(f.request(proto::make_request(proto::Op::unlock))["ok"] == true);
    CHECK_FALSE(f.keyring_admin.unlocked_with.has_value());
    proto::Json with_password = proto::make_request(proto::Op::unlock);
    with_password["password"] = "typed at a terminal";
    CHECK(f.request(with_password)["ok"] == true);
    CHECK(f.keyring_admin.unlocked_with == "typed at a terminal");
    with_password["password"] = 42;
    CHECK(f.request(with_password)["error"]["code"] == "bad_request");
    f.keyring.fail_with(proto::ErrorCode::keyring_locked);
    CHECK(f.request(proto::make_request(proto::Op::unlock))["error"]["code"] == "keyring_locked");
    f.keyring.fail_with(std::nullopt);
}

}  // namespace test_dispatcher
