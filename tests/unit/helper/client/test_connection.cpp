// The client side of the wire protocol against misbehaving servers, and
// documents passed by reference (PROTOCOL.md, Passed documents).
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/uio.h>
#include <sys/un.h>
#include <unistd.h>

#include <catch2/catch.hpp>
#include <cstring>
#include <filesystem>
#include <functional>
#include <thread>

#include "helper/client/connection.hpp"
#include "proto/error.hpp"
#include "proto/framing.hpp"
#include "proto/sealed_file.hpp"
#include "proto/socket_path.hpp"

namespace test_connection {

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

namespace {

// Sends `payload` as one frame with `fd` passed along with its first byte.
void send_passing(int socket, const std::string& payload, int fd) {
    const std::string frame = proto::encode_frame(payload, proto::kMaxResponseFrameSize);
    iovec part{const_cast<char*>(frame.data()), frame.size()};
    alignas(cmsghdr) char control[CMSG_SPACE(sizeof(int))] = {};
    msghdr message{};
    message.msg_iov = &part;
    message.msg_iovlen = 1;
    message.msg_control = control;
    message.msg_controllen = sizeof control;
    cmsghdr* header = CMSG_FIRSTHDR(&message);
    header->cmsg_level = SOL_SOCKET;
    header->cmsg_type = SCM_RIGHTS;
    header->cmsg_len = CMSG_LEN(sizeof(int));
    std::memcpy(CMSG_DATA(header), &fd, sizeof fd);
    (void)::sendmsg(socket, &message, MSG_NOSIGNAL);
}

std::string naming(std::size_t bytes) {
    return R"({"v":1,"ok":true,"provider":"r.example/acme/big","source":"cache",)"
           R"("document_fd":{"bytes":)" +
           std::to_string(bytes) + R"(},"age_s":3,"expires_in_s":297})";
}

std::size_t open_descriptors() {
    return static_cast<std::size_t>(
        std::distance(fs::directory_iterator("/proc/self/fd"), fs::directory_iterator{}));
}

// What the client makes of `payload` with `fd` passed; the error's text when
// it refuses it.
std::string outcome(const std::string& payload, int fd) {
    const FakeDaemon daemon([&](int socket) { send_passing(socket, payload, fd); });
    try {
        return call(daemon.socket(), std::chrono::seconds(5)).dump();
    } catch (const helper::client::ConnectionLost& e) {
        return e.what();
    }
}

}  // namespace

TEST_CASE("a passed document's members take the place of document_fd", "[helper][connection]") {
    const std::string document = R"({"url":"https://r.example/v1/providers/acme/big/versions",)"
                                 R"("versions":[{"version":"1.0.0"}]})";
    const auto file = proto::SealedFile::make(document);
    REQUIRE(file);
    const std::size_t before = open_descriptors();
    const proto::Json reply = proto::Json::parse(outcome(naming(document.size()), file->fd()));
    CHECK(reply ==
          proto::Json::parse(R"({"v":1,"ok":true,"provider":"r.example/acme/big","source":"cache",)"
                             R"("url":"https://r.example/v1/providers/acme/big/versions",)"
                             R"("versions":[{"version":"1.0.0"}],"age_s":3,"expires_in_s":297})"));
    CHECK(open_descriptors() == before);  // the passed descriptor was closed
}

TEST_CASE("a passed document that is missing, unsealed, of another size or repeats a member",
          "[helper][connection]") {
    const std::string document = R"({"versions":[]})";
    const auto file = proto::SealedFile::make(document);
    const auto repeating = proto::SealedFile::make(R"({"source":"network"})");
    const auto not_json = proto::SealedFile::make("[1,2");
    REQUIRE(file);
    REQUIRE(repeating);
    REQUIRE(not_json);
    const proto::UniqueFd unsealed(::memfd_create("test", MFD_CLOEXEC));
    REQUIRE(::write(unsealed.get(), document.data(), document.size()) ==
            static_cast<ssize_t>(document.size()));
    const std::size_t before = open_descriptors();

    {  // Named, not passed: a descriptor-less frame.
        const FakeDaemon bare(
            [&](int socket) { send_all(socket, proto::encode_frame(naming(15))); });
        CHECK_THROWS_WITH(call(bare.socket(), std::chrono::seconds(5)),
                          "hostkeeperd named a passed document but passed none");
    }

    CHECK(outcome(naming(document.size() + 1), file->fd()) ==
          "hostkeeperd passed a bad document: a passed document is not the size its reply "
          "names (16 bytes)");
    CHECK_THAT(outcome(R"({"v":1,"ok":true,"document_fd":{"bytes":"15"}})", file->fd()),
               Catch::Contains("\"document_fd\" has no \"bytes\""));
    CHECK(outcome(naming(repeating->size()), repeating->fd()) ==
          "hostkeeperd passed a document that repeats \"source\"");
    CHECK_THAT(
        outcome(naming(not_json->size()), not_json->fd()),
        Catch::Contains("hostkeeperd passed a bad document") && Catch::Contains("not valid JSON"));

    CHECK(outcome(naming(document.size()), unsealed.get()) ==
          "hostkeeperd passed a bad document: a passed document is not a sealed memfd");

    // A descriptor with a reply that names none is closed and ignored.
    CHECK(proto::Json::parse(outcome(R"({"v":1,"ok":true})", file->fd())) ==
          proto::Json::parse(R"({"v":1,"ok":true})"));
    CHECK(open_descriptors() == before);
}

}  // namespace test_connection
