// The server on a real Unix socket, answering through a trivial request
// handler: framing, garbage and abuse, deadlines, the connection cap, the
// socket's ownership, and stopping. (The daemon's own handler is
// test_daemon_dispatcher; the real binaries are in the integration tests.)
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <atomic>
#include <boost/asio/io_context.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/redirect_error.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <catch2/catch.hpp>
#include <filesystem>
#include <fstream>
#include <future>
#include <memory>
#include <string>
#include <thread>

#include "daemon/server/request_handler.hpp"
#include "daemon/server/server.hpp"
#include "daemon/server/socket_owner.hpp"
#include "proto/framing.hpp"
#include "proto/socket_path.hpp"
#include "server_fixture.hpp"
#include "socket_fixture.hpp"

namespace test_server {

using namespace hostkeeper;
using namespace std::chrono_literals;
namespace asio = boost::asio;
namespace fs = std::filesystem;
using test::RawClient;

namespace {

// Answers {"v":1,"ok":true,"op":OP,"connections":N} (the op as asked), and
// {"ok":true,...} with Reply::stop for "stop". A request whose "host" is
// "slow.example" waits until open_gate(); one whose "host" is
// "prepared.example" gets a prepared reply: {"v":1,"ok":true,"big":"xx..."}
// with `prepared` (more than a socket buffer holds) as its shared part.
class FakeHandler final : public daemon::server::RequestHandler {
  public:
    explicit FakeHandler(asio::io_context& io)
        : io_(io), gate_(io, asio::steady_timer::time_point::max()) {}

    asio::awaitable<daemon::server::Reply> handle(std::string_view payload,
                                                  daemon::server::ServerState server) override {
        ++calls;
        const proto::Json request = proto::parse_payload(payload);
        if (request.value("host", "") == "slow.example") {
            ++held;
            while (gate_closed_) {
                boost::system::error_code ec;
                co_await gate_.async_wait(asio::redirect_error(asio::use_awaitable, ec));
            }
        }
        if (request.value("host", "") == "prepared.example") {
            daemon::server::Reply reply{R"({"v":1,"ok":true,"big":")"};
            reply.shared = prepared;
            reply.tail = R"("})";
            co_return reply;
        }
        proto::Json response = proto::make_ok();
        response["op"] = request.value("op", "");
        response["connections"] = server.connections;
        co_return daemon::server::Reply{response.dump(), request.value("op", "") == "stop"};
    }

    void open_gate() {
        asio::post(io_, [this] {
            gate_closed_ = false;
            gate_.cancel();
        });
    }

    std::atomic<int> calls{0};
    std::atomic<int> held{0};
    const std::shared_ptr<const std::string> prepared =
        std::make_shared<const std::string>(std::size_t{1} << 20, 'x');

  private:
    asio::io_context& io_;
    asio::steady_timer gate_;
    bool gate_closed_ = true;
};

struct ServerFixture : test::SocketServer {
    explicit ServerFixture(daemon::server::ServerOptions options = {1, 1s, 1s, 0s}) {
        serve(handler, options);
    }
    ~ServerFixture() { shutdown(); }
    FakeHandler handler{io};
};

proto::Json get_request(const std::string& host) {
    proto::Json r = proto::make_request(proto::Op::get);
    r["host"] = host;
    return r;
}

}  // namespace

TEST_CASE("each request is answered on its connection, many on one", "[daemon][server]") {
    ServerFixture f;
    const RawClient client(f.location.socket);
    for (int i = 0; i < 100; ++i) {
        client.send_json(get_request("h"));
        const auto response = client.read_json();
        REQUIRE(response);
        REQUIRE(response->at("op") == "get");
        REQUIRE(response->at("connections") == 1);
    }
    CHECK(f.handler.calls == 100);
}

TEST_CASE("a prepared reply is written whole, header first, and its shared part left as it is",
          "[daemon][server]") {
    ServerFixture f;
    const RawClient client(f.location.socket);
    const std::string expected =
        proto::encode_frame(R"({"v":1,"ok":true,"big":")" + *f.handler.prepared + R"("})",
                            proto::kMaxResponseFrameSize);
    for (int i = 0; i < 3; ++i) {
        client.send_json(get_request("prepared.example"));
        const auto frame = client.read_bytes(expected.size());
        REQUIRE(frame);
        CHECK(*frame == expected);
    }
    // The same request after it: the stream is still in step.
    client.send_json(get_request("h"));
    const auto response = client.read_json();
    REQUIRE(response);
    CHECK(response->at("op") == "get");
    CHECK(*f.handler.prepared == std::string(std::size_t{1} << 20, 'x'));  // never scrubbed
}

TEST_CASE("unit: the idle timeout waits while the server is kept busy, then stops it",
          "[daemon][server]") {
    ServerFixture f({1, 5s, 1s, 1s});
    std::atomic<bool> busy{true};
    std::atomic<int> idle_calls{0};
    std::promise<void> set;
    asio::post(f.io, [&] {
        f.server->on_idle([&] {
            ++idle_calls;
            f.server->stop();
        });
        f.server->stay_while([&] { return busy.load(); });
        set.set_value();
    });
    set.get_future().wait();
    // Two idle timeouts pass while busy: the server stays.
    std::this_thread::sleep_for(2500ms);
    CHECK(idle_calls == 0);
    CHECK(!f.stopped);
    busy = false;
    CHECK(test::wait_for([&] { return f.stopped.load(); }));
    CHECK(idle_calls == 1);
}

TEST_CASE("a reply that asks for it stops the server once it is written", "[daemon][server]") {
    ServerFixture f;
    const RawClient idle(f.location.socket);
    const proto::Json answer = f.request(proto::make_request(proto::Op::stop));
    CHECK(answer.at("ok") == true);
    CHECK(test::wait_for([&] { return f.stopped.load(); }));
    CHECK(f.stopping == 1);
    CHECK(idle.closed_within(2000));  // idle connections are closed
}

TEST_CASE("an oversized or empty frame is answered with an error and the connection closed",
          "[daemon][server]") {
    ServerFixture f;
    for (const std::string& header :
         {std::string("\x00\x10\x00\x01", 4), std::string("\xff\xff\xff\xff", 4),
          std::string("\x00\x00\x00\x00", 4)}) {
        const RawClient client(f.location.socket);
        client.send_bytes(header);
        const auto response = client.read_json();
        REQUIRE(response);
        CHECK(response->at("ok") == false);
        CHECK((test::error_code_of(*response) == "too_large" ||
               test::error_code_of(*response) == "bad_request"));
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

TEST_CASE("a second owner of the same socket is refused while the first lives",
          "[daemon][server]") {
    ServerFixture f;
    CHECK_THROWS_AS(daemon::server::SocketOwner(f.location), daemon::server::AlreadyRunning);
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
        const daemon::server::SocketOwner owner(location);
        CHECK(fs::is_socket(location.socket));
    }
    CHECK_FALSE(fs::exists(location.socket));  // removed on exit

    { std::ofstream(location.socket.string()) << "not a socket"; }
    CHECK_THROWS_WITH(daemon::server::SocketOwner(location), Catch::Contains("not a socket"));
    fs::remove_all(root);
}

TEST_CASE("a loose socket directory is refused with advice", "[daemon][server]") {
    char pattern[] = "/tmp/hk-unit.XXXXXX";
    const fs::path root = ::mkdtemp(pattern);
    const proto::SocketLocation location{root / "d" / "socket", root / "d"};
    fs::create_directory(location.directory);
    fs::permissions(location.directory, fs::perms::all);
    CHECK_THROWS_WITH(daemon::server::SocketOwner(location), Catch::Contains("chmod 700"));
    fs::remove_all(root);
}

TEST_CASE("stop lets a request in flight finish, then the server stops", "[daemon][server]") {
    auto f = std::make_unique<ServerFixture>();
    const RawClient client(f->location.socket);
    client.send_json(get_request("slow.example"));  // the handler holds it until the gate opens
    REQUIRE(test::wait_for([&] { return f->handler.held == 1; }));

    std::atomic<bool>& stopped =
        f->stopped;  // the fixture's stopped hook ends the event loop, as main does
    asio::post(f->io, [&] { f->server->stop(); });
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
    f->handler.open_gate();
    const auto response = client.read_json();
    REQUIRE(response);
    CHECK(response->at("op") == "get");
    CHECK(test::wait_for([&] { return stopped.load(); }));
}

}  // namespace test_server
