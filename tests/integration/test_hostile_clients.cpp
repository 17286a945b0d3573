// Hostile and broken clients against the real daemon, and a fake daemon
// against the real helper: nothing they do may crash either end, hold a
// slot forever, or cost another client its answer.
#include <signal.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <atomic>
#include <catch2/catch.hpp>
#include <cstring>
#include <memory>
#include <random>
#include <thread>
#include <vector>

#include "harness.hpp"
#include "raw_client.hpp"

namespace test_hostile_clients {

using namespace hostkeeper::it;
namespace fs = std::filesystem;
using namespace std::chrono_literals;

namespace {

std::string nested_arrays(std::size_t depth) {
    return std::string(depth, '[') + std::string(depth, ']');
}

// A daemon impostor of the same uid: answers every connection with `reply`
// (raw bytes, header included), then hangs up.
class FakeDaemon {
  public:
    FakeDaemon(const fs::path& socket, std::string reply) {
        listener_ = ::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
        sockaddr_un address{};
        address.sun_family = AF_UNIX;
        std::strncpy(address.sun_path, socket.c_str(), sizeof address.sun_path - 1);
        if (::bind(listener_, reinterpret_cast<const sockaddr*>(&address), sizeof address) != 0 ||
            ::listen(listener_, 16) != 0) {
            throw std::runtime_error("fake daemon: cannot listen");
        }
        thread_ = std::thread([this, reply = std::move(reply)] {
            while (true) {
                const int fd = ::accept(listener_, nullptr, nullptr);
                if (fd < 0) return;
                char header[4];
                ::recv(fd, header, 4, MSG_WAITALL);
                std::size_t done = 0;
                while (done < reply.size()) {
                    const ssize_t n =
                        ::send(fd, reply.data() + done, reply.size() - done, MSG_NOSIGNAL);
                    if (n <= 0) break;
                    done += static_cast<std::size_t>(n);
                }
                ::close(fd);
            }
        });
    }
    FakeDaemon(const FakeDaemon&) = delete;
    FakeDaemon& operator=(const FakeDaemon&) = delete;
    ~FakeDaemon() {
        ::shutdown(listener_, SHUT_RDWR);
        ::close(listener_);
        thread_.join();
    }

  private:
    int listener_ = -1;
    std::thread thread_;
};

// Connections the daemon has taken (its trace log says so for each).
int accepted(const Daemon& daemon) {
    const std::string log = daemon.log();
    int count = 0;
    for (auto at = log.find("connection from pid"); at != std::string::npos;
         at = log.find("connection from pid", at + 1)) {
        ++count;
    }
    return count;
}

std::string framed(const std::string& payload) {
    const auto n = static_cast<std::uint32_t>(payload.size());
    return std::string{static_cast<char>(n >> 24U), static_cast<char>((n >> 16U) & 0xffU),
                       static_cast<char>((n >> 8U) & 0xffU), static_cast<char>(n & 0xffU)} +
           payload;
}

}  // namespace

TEST_CASE("a frame of 32,768 nested arrays is refused and the daemon lives on", "[hostile]") {
    const fs::path socket = fresh_socket();
    Daemon daemon(socket);
    REQUIRE(helper(socket, {"store", "deep.example.com"}, R"({"token":"kept"})").exit_code == 0);
    {
        RawClient client(socket);
        REQUIRE(client.send_frame(nested_arrays(32768)));
        const auto reply = client.read_frame();
        REQUIRE(reply);
        CHECK_THAT(*reply, Catch::Contains("bad_request") &&
                               Catch::Contains("nested deeper than 64 levels"));
        // The connection stays usable, as for any other malformed message.
        REQUIRE(client.send_frame(request("hello")));
        const auto hello = client.read_frame();
        REQUIRE(hello);
        CHECK_THAT(*hello, Catch::Contains(R"("ok":true)"));
    }
    // Nested objects in the credentials the helper is handed to store.
    std::string deep_object;
    for (int i = 0; i < 5000; ++i) deep_object += R"({"a":)";
    deep_object += "1" + std::string(5000, '}');
    const Result store =
        helper(socket, {"store", "deep.example.com"}, R"({"token":"t","x":)" + deep_object + "}");
    CHECK(store.exit_code == 2);
    CHECK_THAT(store.err, Catch::Contains("nested deeper than 64 levels"));
    CHECK(process_alive(daemon.pid()));
    const Result got = helper(socket, {"get", "deep.example.com"});
    CHECK(got.exit_code == 0);
    CHECK(got.out == "{\"token\":\"kept\"}\n");
}

TEST_CASE("a client that never reads its replies is cut off after 16", "[hostile]") {
    const fs::path socket = fresh_socket();
    Daemon daemon(socket);
    RawClient greedy(socket);
    for (int i = 0; i < 200; ++i) {
        if (!greedy.send_frame(request("hello"))) break;
    }
    // Not reading until the daemon has given up on it (reading earlier would
    // make it a client that keeps up, which may pipeline as much as it likes).
    REQUIRE(wait_until([&] { return daemon.log().find("16 replies unread") != std::string::npos; },
                       20s));
    // Every reply it is owed up to the limit, then the end of the stream.
    int replies = 0;
    while (greedy.read_frame(5s)) ++replies;
    CHECK(replies == 16);
    CHECK(process_alive(daemon.pid()));
    CHECK(helper(socket, {"get", "other.example.com"}).exit_code == 0);
}

TEST_CASE("a client that does not take a large reply is cut off by the write deadline",
          "[hostile]") {
    const fs::path socket = fresh_socket();
    Daemon daemon(socket, {"--read-timeout", "1"});
    // A credentials object of ~55 KB: a few replies fill the socket's buffer.
    const std::string big(55000, 'x');
    REQUIRE(helper(socket, {"store", "big.example.com"}, R"({"token":"t","pad":")" + big + "\"}")
                .exit_code == 0);
    RawClient stalled(socket);
    for (int i = 0; i < 12; ++i) {
        if (!stalled.send_frame(request("get", R"(,"host":"big.example.com")"))) break;
    }
    // Not reading: the daemon's write blocks, and the deadline (1 s) closes it.
    CHECK(wait_until(
        [&] {
            return daemon.log().find("it did not take its reply within 1 s") != std::string::npos;
        },
        10s));
    CHECK(stalled.closed_within(10s));
    CHECK(process_alive(daemon.pid()));
    CHECK(helper(socket, {"get", "other.example.com"}).exit_code == 0);
}

TEST_CASE("silent clients holding every slot make the helper wait, then it is served",
          "[hostile]") {
    const fs::path socket = fresh_socket();
    Daemon daemon(socket, {"--max-connections", "8", "--read-timeout", "8"});
    std::vector<std::unique_ptr<RawClient>> silent;
    for (int i = 0; i < 8; ++i) silent.push_back(std::make_unique<RawClient>(socket));
    // The read deadline frees the slots 8 s after they were taken: the helper
    // is refused until then (a loaded machine has 8 s to start it), and asks
    // again meanwhile.
    REQUIRE(wait_until([&] { return accepted(daemon) == 8; }, 5s));
    const Result got = run({bin("terraform-credentials-hostkeeper"), "--socket=" + socket.string(),
                            "--timeout=30", "get", "busy.example.com"});
    CHECK(got.exit_code == 0);
    CHECK(got.out == "{}\n");
    CHECK_THAT(daemon.log(), Catch::Contains("refusing a connection"));
    CHECK(process_alive(daemon.pid()));
}

TEST_CASE("a daemon busy until the helper's deadline is reported busy, with its own exit code",
          "[hostile]") {
    const fs::path socket = fresh_socket();
    Daemon daemon(socket, {"--max-connections", "8", "--read-timeout", "60"});
    std::vector<std::unique_ptr<RawClient>> silent;
    for (int i = 0; i < 8; ++i) silent.push_back(std::make_unique<RawClient>(socket));
    REQUIRE(wait_until([&] { return accepted(daemon) == 8; }, 5s));
    const Result got = run({bin("terraform-credentials-hostkeeper"), "--socket=" + socket.string(),
                            "--timeout=1", "get", "busy.example.com"});
    CHECK(got.exit_code == 6);
    CHECK_THAT(got.err, Catch::Contains("stayed busy"));
    CHECK(got.out.empty());
    CHECK(process_alive(daemon.pid()));
}

TEST_CASE("a flood of garbage connections leaves the daemon serving, its memory bounded",
          "[hostile]") {
    const fs::path socket = fresh_socket();
    Daemon daemon(socket);
    REQUIRE(helper(socket, {"store", "flood.example.com"}, R"({"token":"survives"})").exit_code ==
            0);
    const long before = resident_kib(daemon.pid());
    std::mt19937 random(12345);
    std::uniform_int_distribution<int> byte(0, 255);
    for (int round = 0; round < 2000; ++round) {
        RawClient client(socket);
        std::string garbage(static_cast<std::size_t>(1 + round % 300), '\0');
        for (char& c : garbage) c = static_cast<char>(byte(random));
        if (round % 3 == 0) garbage = framed(garbage);  // a well-formed frame of junk
        client.send_bytes(garbage);
    }
    CHECK(wait_until(
        [&] {
            return helper(socket, {"get", "flood.example.com"}).exit_code == 0;
        },
        20s));
    const long after = resident_kib(daemon.pid());
    CAPTURE(before, after);
    if (address_sanitized(daemon.pid())) {
        WARN("RSS growth not checked under AddressSanitizer: " << after - before << " KiB");
    } else {
        CHECK(after < before + 16 * 1024);
    }
    CHECK(process_alive(daemon.pid()));
    CHECK(helper(socket, {"get", "flood.example.com"}).out == "{\"token\":\"survives\"}\n");
}

TEST_CASE("a fake daemon cannot crash the helper", "[hostile]") {
    const fs::path socket = fresh_socket();
    struct Case {
        const char* what;
        std::string reply;
        int exit_code;
        const char* says;
    };
    const std::vector<Case> cases{
        {"16 MiB of nested arrays", framed(nested_arrays(8 * 1024 * 1024)), 1,
         "nested deeper than 64 levels"},
        {"a header announcing 4 GiB", std::string("\xff\xff\xff\xff", 4), 1, "over the limit"},
        {"not JSON", framed("\x01\x02garbage"), 1, "not valid JSON"},
        {"a JSON array", framed("[1,2,3]"), 1, "not a JSON object"},
        {"half a frame", framed(R"({"v":1,"ok":true})").substr(0, 9), 1, "closed the connection"},
    };
    for (const Case& c : cases) {
        SECTION(c.what) {
            fs::remove(socket);
            const FakeDaemon fake(socket, c.reply);
            const Result got =
                run({bin("terraform-credentials-hostkeeper"), "--socket=" + socket.string(),
                     "--timeout=10", "get", "fake.example.com"});
            CHECK(got.exit_code == c.exit_code);
            CHECK_THAT(got.err, Catch::Contains(c.says));
            CHECK(got.out.empty());
        }
    }
}

}  // namespace test_hostile_clients
