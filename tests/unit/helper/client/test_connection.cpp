// The client side of the wire protocol against misbehaving servers.
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <catch2/catch.hpp>
#include <cstring>
#include <filesystem>
#include <functional>
#include <thread>

#include "helper/client/connection.hpp"
#include "proto/error.hpp"
#include "proto/socket_path.hpp"

using namespace hostkeeper;
namespace fs = std::filesystem;

namespace {

// Accepts one connection, reads the request, then does `behave(fd)`.
class FakeDaemon {
  public:
    explicit FakeDaemon(std::function<void(int)> behave) {
        char pattern[] = "/tmp/hk-unit.XXXXXX";
        root_ = ::mkdtemp(pattern);
        socket_ = root_ / "socket";
        listen_fd_ = ::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
        sockaddr_un address{};
        address.sun_family = AF_UNIX;
        std::strncpy(address.sun_path, socket_.c_str(), sizeof address.sun_path - 1);
        REQUIRE(::bind(listen_fd_, reinterpret_cast<const sockaddr*>(&address), sizeof address) ==
                0);
        REQUIRE(::listen(listen_fd_, 4) == 0);
        thread_ = std::thread([this, behave = std::move(behave)] {
            const int fd = ::accept(listen_fd_, nullptr, nullptr);
            char buffer[4096];
            (void)::recv(fd, buffer, sizeof buffer, 0);
            behave(fd);
            ::close(fd);
        });
    }
    FakeDaemon(const FakeDaemon&) = delete;
    FakeDaemon& operator=(const FakeDaemon&) = delete;
    ~FakeDaemon() {
        thread_.join();
        ::close(listen_fd_);
        fs::remove_all(root_);
    }
    const fs::path& socket() const { return socket_; }

  private:
    fs::path root_;
    fs::path socket_;
    int listen_fd_ = -1;
    std::thread thread_;
};

proto::Json call(const fs::path& socket, std::chrono::milliseconds timeout) {
    const helper::client::Deadline deadline(timeout);
    int error = 0;
    auto connection = helper::client::Connection::open(socket, deadline, error);
    REQUIRE(connection.has_value());
    return connection->round_trip(proto::make_request(proto::Op::hello), deadline);
}

void send_all(int fd, const std::string& bytes) {
    (void)::send(fd, bytes.data(), bytes.size(), MSG_NOSIGNAL);
}

}  // namespace

TEST_CASE("a daemon that hangs up without answering", "[helper][connection]") {
    const FakeDaemon daemon([](int) {});
    CHECK_THROWS_AS(call(daemon.socket(), std::chrono::seconds(5)), helper::client::ConnectionLost);
}

TEST_CASE("a daemon that sends half a response and stalls hits the deadline",
          "[helper][connection]") {
    const FakeDaemon daemon([](int fd) {
        send_all(fd, std::string("\x00\x00\x00\x20{\"v\":1", 10));
        std::this_thread::sleep_for(std::chrono::milliseconds(1500));
    });
    try {
        call(daemon.socket(), std::chrono::milliseconds(300));
        FAIL("no timeout");
    } catch (const proto::Error& e) {
        CHECK(e.code() == proto::ErrorCode::timeout);
        CHECK_THAT(e.what(), Catch::Contains("hostkeeperd"));
    }
}

TEST_CASE("a daemon that announces an oversized response", "[helper][connection]") {
    // One byte over the 16 MiB a response may have.
    const FakeDaemon daemon([](int fd) { send_all(fd, std::string("\x01\x00\x00\x01", 4)); });
    try {
        call(daemon.socket(), std::chrono::seconds(5));
        FAIL("accepted");
    } catch (const helper::client::ConnectionLost& e) {
        CHECK_THAT(e.what(), Catch::Contains("bad response") &&
                                 Catch::Contains("over the limit of 16777216"));
    }
}

TEST_CASE("a daemon that answers garbage", "[helper][connection]") {
    const FakeDaemon daemon([](int fd) { send_all(fd, std::string("\x00\x00\x00\x05hello", 9)); });
    try {
        call(daemon.socket(), std::chrono::seconds(5));
        FAIL("accepted");
    } catch (const helper::client::ConnectionLost& e) {
        CHECK_THAT(e.what(), Catch::Contains("bad response") && Catch::Contains("not valid JSON"));
    }
}

TEST_CASE("nothing listening: no connection, and the reason", "[helper][connection]") {
    const helper::client::Deadline deadline(std::chrono::seconds(1));
    int error = 0;
    CHECK_FALSE(helper::client::Connection::open("/nonexistent/hostkeeper/socket", deadline, error)
                    .has_value());
    CHECK(error == ENOENT);
}

namespace {

// A listener nobody serves: what a client would be talking to, and whether it tried.
struct Listener {
    explicit Listener(const fs::path& socket_path) {
        fd = ::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
        sockaddr_un address{};
        address.sun_family = AF_UNIX;
        std::strncpy(address.sun_path, socket_path.c_str(), sizeof address.sun_path - 1);
        REQUIRE(::bind(fd, reinterpret_cast<const sockaddr*>(&address), sizeof address) == 0);
        REQUIRE(::listen(fd, 4) == 0);
    }
    Listener(const Listener&) = delete;
    Listener& operator=(const Listener&) = delete;
    ~Listener() { ::close(fd); }
    bool was_contacted() const {
        const int client = ::accept(fd, nullptr, nullptr);
        if (client < 0) return false;
        ::close(client);
        return true;
    }
    int fd = -1;
};

std::string open_refusal(const fs::path& socket) {
    const helper::client::Deadline deadline(std::chrono::seconds(1));
    int error = 0;
    try {
        (void)helper::client::Connection::open(socket, deadline, error);
    } catch (const proto::UnsafeDirectory& e) {
        return e.what();
    }
    return "";
}

}  // namespace

TEST_CASE("the client refuses a socket whose directory others can reach, before connecting",
          "[helper][connection]") {
    char pattern[] = "/tmp/hk-unit.XXXXXX";
    const fs::path root = ::mkdtemp(pattern);
    const fs::path dir = root / "hostkeeper";
    fs::create_directory(dir);
    const Listener listener(dir / "socket");

    fs::permissions(dir, fs::perms::owner_all | fs::perms::group_read | fs::perms::group_exec |
                             fs::perms::others_read | fs::perms::others_exec);
    CHECK_THAT(open_refusal(dir / "socket"),
               Catch::Contains("has mode 0755") && Catch::Contains("chmod 700"));
    CHECK_FALSE(listener.was_contacted());

    // A symbolic link in its place, even to a private directory of our own.
    fs::permissions(dir, fs::perms::owner_all);
    fs::create_directory_symlink(dir, root / "link");
    CHECK_THAT(open_refusal(root / "link" / "socket"), Catch::Contains("symbolic link"));
    CHECK_FALSE(listener.was_contacted());

    // The same directory, private: connected, and the listener sees it.
    const helper::client::Deadline deadline(std::chrono::seconds(1));
    int error = 0;
    CHECK(helper::client::Connection::open(dir / "socket", deadline, error).has_value());
    CHECK(listener.was_contacted());
    fs::remove_all(root);
}
