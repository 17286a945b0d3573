// The server and dispatcher on a real Unix socket, with an in-memory keyring:
// the wire protocol, garbage and abuse. (The real keyring and the real
// binaries are covered by the integration tests.)
#include <catch2/catch.hpp>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <boost/asio/io_context.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/thread_pool.hpp>
#include <filesystem>
#include <fstream>
#include <atomic>
#include <future>
#include <memory>
#include <thread>

#include "credential_service.hpp"
#include "dispatcher.hpp"
#include "hostkeeper/proto/socket_path.hpp"
#include "memory_keyring.hpp"
#include "server.hpp"
#include "fake_http_client.hpp"
#include "socket_fixture.hpp"
#include "socket_owner.hpp"

using namespace hostkeeper;
using namespace std::chrono_literals;
namespace asio = boost::asio;
namespace fs = std::filesystem;
using test::RawClient;

namespace {

class StubControl final : public daemon::DaemonControl {
public:
    proto::Json describe() const override { return {{"version", "test"}}; }
    void request_stop() override { ++stops; }
    int stops = 0;
};

struct ServerFixture {
    explicit ServerFixture(daemon::ServerOptions options = {1, 1s, 1s, 0s}) {
        char pattern[] = "/tmp/hk-unit.XXXXXX";
        root = ::mkdtemp(pattern);
        location = {root / "d" / "socket", root / "d"};
        owner.emplace(location);
        options.max_connections = options.max_connections == 1 ? 16 : options.max_connections;
        server.emplace(io, owner->release_listener(), dispatcher, options);
        server->start();
        thread = std::thread([this] { io.run(); });
    }
    ~ServerFixture() {
        std::promise<void> stopped;
        asio::post(io, [&] { server->stop([&] { io.stop(); }); });
        thread.join();
        server.reset();
        owner.reset();
        pool.join();
        fs::remove_all(root);
    }
    proto::Json request(const proto::Json& message) {
        const RawClient client(location.socket);
        client.send_json(message);
        auto response = client.read_json();
        REQUIRE(response.has_value());
        return *response;
    }

    fs::path root;
    proto::SocketLocation location;
    asio::io_context io;
    asio::thread_pool pool{1};
    test::MemoryKeyring keyring;
    daemon::CredentialService credentials{io.get_executor(), pool.get_executor(), keyring, {}};
    StubControl control;
    test::FakeHttpClient http{io.get_executor()};
    daemon::DiscoveryService discovery{io.get_executor(), http, credentials, {}};
    daemon::RegistryService registry{io.get_executor(), http, credentials, discovery, {}};
    daemon::Dispatcher dispatcher{credentials, discovery, registry, control};
    std::optional<daemon::SocketOwner> owner;
    std::optional<daemon::Server> server;
    std::thread thread;
};

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
    CHECK(f.request(stop).at("ok") == true);
    CHECK(f.control.stops == 1);
}

TEST_CASE("an oversized or empty frame is answered with an error and the connection closed", "[daemon][server]") {
    ServerFixture f;
    for (const std::string& header : {std::string("\x00\x10\x00\x01", 4), std::string("\xff\xff\xff\xff", 4),
                                      std::string("\x00\x00\x00\x00", 4)}) {
        const RawClient client(f.location.socket);
        client.send_bytes(header);
        const auto response = client.read_json();
        REQUIRE(response);
        CHECK(response->at("ok") == false);
        CHECK((test::error_code_of(*response) == "too_large" || test::error_code_of(*response) == "bad_request"));
        CHECK(client.closed_within(2000));
    }
    // The daemon still serves.
    CHECK(f.request(get_request("h")).at("ok") == true);
}

TEST_CASE("silent and half-frame clients are cut off by the read deadline", "[daemon][server]") {
    ServerFixture f;  // read_timeout 1 s
    const RawClient silent(f.location.socket);
    const RawClient half(f.location.socket);
    half.send_bytes(std::string("\x00\x00\x00\x40{\"v\":1", 10));
    CHECK(silent.closed_within(5000));
    CHECK(half.closed_within(5000));
    CHECK(f.request(get_request("h")).at("ok") == true);
}

TEST_CASE("a client that vanishes mid-frame does not disturb the daemon", "[daemon][server]") {
    ServerFixture f;
    for (int i = 0; i < 20; ++i) {
        const RawClient client(f.location.socket);
        client.send_bytes(std::string("\x00\x00\x01\x00{\"v\":1,\"op\":", 16));
    }
    CHECK(f.request(get_request("h")).at("ok") == true);
}

TEST_CASE("connections over the cap are refused with 'busy'", "[daemon][server]") {
    ServerFixture f({2, 5s, 1s, 0s});
    const RawClient a(f.location.socket);
    const RawClient b(f.location.socket);
    // Make sure both are being served before the third arrives.
    a.send_json(get_request("h"));
    REQUIRE(a.read_json());
    b.send_json(get_request("h"));
    REQUIRE(b.read_json());
    const RawClient c(f.location.socket);
    const auto response = c.read_json();
    REQUIRE(response);
    CHECK(test::error_code_of(*response) == "busy");
    CHECK(c.closed_within(2000));
}

TEST_CASE("a second owner of the same socket is refused while the first lives", "[daemon][server]") {
    ServerFixture f;
    CHECK_THROWS_AS(daemon::SocketOwner(f.location), daemon::AlreadyRunning);
    // The first one still answers.
    CHECK(f.request(get_request("h")).at("ok") == true);
}

TEST_CASE("a stale socket file is replaced, a non-socket is not", "[daemon][server]") {
    char pattern[] = "/tmp/hk-unit.XXXXXX";
    const fs::path root = ::mkdtemp(pattern);
    const proto::SocketLocation location{root / "d" / "socket", root / "d"};
    proto::ensure_private_directory(location.directory, ::geteuid());
    {
        // A socket file nobody listens on, as a killed daemon leaves behind.
        const int fd = ::socket(AF_UNIX, SOCK_STREAM, 0);
        sockaddr_un address{};
        address.sun_family = AF_UNIX;
        std::strncpy(address.sun_path, location.socket.c_str(), sizeof address.sun_path - 1);
        REQUIRE(::bind(fd, reinterpret_cast<const sockaddr*>(&address), sizeof address) == 0);
        ::close(fd);
    }
    REQUIRE(fs::exists(location.socket));
    {
        const daemon::SocketOwner owner(location);
        CHECK(fs::is_socket(location.socket));
    }
    CHECK_FALSE(fs::exists(location.socket));  // removed on exit

    { std::ofstream(location.socket.string()) << "not a socket"; }
    CHECK_THROWS_WITH(daemon::SocketOwner(location), Catch::Contains("not a socket"));
    fs::remove_all(root);
}

TEST_CASE("a loose socket directory is refused with advice", "[daemon][server]") {
    char pattern[] = "/tmp/hk-unit.XXXXXX";
    const fs::path root = ::mkdtemp(pattern);
    const proto::SocketLocation location{root / "d" / "socket", root / "d"};
    fs::create_directory(location.directory);
    fs::permissions(location.directory, fs::perms::all);
    CHECK_THROWS_WITH(daemon::SocketOwner(location), Catch::Contains("chmod 700"));
    fs::remove_all(root);
}

TEST_CASE("stop lets a request in flight finish, then the server stops", "[daemon][server]") {
    auto f = std::make_unique<ServerFixture>();
    f->keyring.put("slow.example", R"({"token":"t"})");
    f->keyring.close_gate();  // the keyring lookup will block until opened
    const RawClient client(f->location.socket);
    client.send_json(get_request("slow.example"));
    REQUIRE(test::wait_for([&] { return f->keyring.lookups == 1; }));

    std::atomic<bool> stopped{false};
    asio::post(f->io, [&] {
        f->server->stop([&] {
            stopped = true;
            f->io.stop();  // what the daemon's main does; the fixture's own stop is then a no-op
        });
    });
    // New connections are no longer accepted...
    REQUIRE(test::wait_for([&] {
        try {
            const RawClient late(f->location.socket);
            return late.closed_within(100);
        } catch (const std::exception&) {
            return true;  // refused outright
        }
    }));
    CHECK_FALSE(stopped);
    // ...but the request in flight is answered.
    f->keyring.open_gate();
    const auto response = client.read_json();
    REQUIRE(response);
    CHECK(response->at("credentials").at("token") == "t");
    CHECK(test::wait_for([&] { return stopped.load(); }));
}
