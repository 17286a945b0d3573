// The command line's side of the registry cache: the capability's encoding,
// the files' small parsers, hostkeeper status's line, and what setup prints
// from a registry_cache_sync answer (against a one-shot fake hostkeeperd that
// answers as the design contract says).
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include <catch2/catch.hpp>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <regex>
#include <thread>

#include "helper/cli/registry_cache_doctor.hpp"
#include "helper/cli/registry_cache_files.hpp"
#include "helper/cli/registry_cache_setup.hpp"
#include "proto/framing.hpp"
#include "proto/messages.hpp"

namespace cli = hostkeeper::helper::cli;
namespace proto = hostkeeper::proto;
using proto::Json;
namespace fs = std::filesystem;

namespace {

std::string b64(const std::string& text) {
    // NOLINTNEXTLINE(cppcoreguidelines-pro-type-reinterpret-cast): bytes of a string
    return cli::base64url(reinterpret_cast<const unsigned char*>(text.data()), text.size());
}

// Answers one request on `socket` with `reply`; the request it got.
class FakeDaemon {
  public:
    FakeDaemon(const fs::path& socket, Json reply) : reply_(std::move(reply)) {
        fd_ = ::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
        sockaddr_un address{};
        address.sun_family = AF_UNIX;
        std::strncpy(address.sun_path, socket.c_str(), sizeof address.sun_path - 1);
        // NOLINTNEXTLINE(cppcoreguidelines-pro-type-reinterpret-cast): the sockets API
        REQUIRE(::bind(fd_, reinterpret_cast<const sockaddr*>(&address), sizeof address) == 0);
        REQUIRE(::listen(fd_, 4) == 0);
        thread_ = std::thread([this] { serve(); });
    }
    FakeDaemon(const FakeDaemon&) = delete;
    FakeDaemon& operator=(const FakeDaemon&) = delete;
    ~FakeDaemon() {
        if (thread_.joinable()) thread_.join();
        ::close(fd_);
    }
    Json request() {
        if (thread_.joinable()) thread_.join();
        return request_;
    }

  private:
    static bool read_exact(int fd, char* out, std::size_t n) {
        std::size_t done = 0;
        while (done < n) {
            const ssize_t got = ::read(fd, out + done, n - done);
            if (got <= 0) return false;
            done += static_cast<std::size_t>(got);
        }
        return true;
    }
    void serve() {
        const int client = ::accept(fd_, nullptr, nullptr);
        if (client < 0) return;
        proto::FrameHeader header{};
        // NOLINTNEXTLINE(cppcoreguidelines-pro-type-reinterpret-cast): bytes
        if (read_exact(client, reinterpret_cast<char*>(header.data()), header.size())) {
            std::string body(proto::decode_header(header), '\0');
            if (read_exact(client, body.data(), body.size())) request_ = proto::parse_payload(body);
        }
        const std::string frame = proto::encode_frame(reply_.dump());
        (void)!::write(client, frame.data(), frame.size());
        ::close(client);
    }
    int fd_ = -1;
    Json reply_;
    Json request_;
    std::thread thread_;
};

// stdout and stderr of `body`, through memfds.
struct Captured {
    int status = -1;
    std::string out, err;
};
template <typename F>
Captured capture(F body) {
    std::fflush(stdout);
    std::fflush(stderr);
    const int out = ::memfd_create("out", MFD_CLOEXEC), err = ::memfd_create("err", MFD_CLOEXEC);
    const int saved_out = ::dup(1), saved_err = ::dup(2);
    ::dup2(out, 1);
    ::dup2(err, 2);
    Captured c;
    c.status = body();
    std::fflush(stdout);
    std::fflush(stderr);
    ::dup2(saved_out, 1);
    ::dup2(saved_err, 2);
    ::close(saved_out);
    ::close(saved_err);
    const auto slurp = [](int fd) {
        std::string text;
        char buffer[4096];
        ::lseek(fd, 0, SEEK_SET);
        for (ssize_t n = 0; (n = ::read(fd, buffer, sizeof buffer)) > 0;)
            text.append(buffer, static_cast<std::size_t>(n));
        ::close(fd);
        return text;
    };
    c.out = slurp(out);
    c.err = slurp(err);
    return c;
}

fs::path private_socket() {
    static int n = 0;
    const fs::path dir = fs::temp_directory_path() /
                         ("hk-rc-unit-" + std::to_string(::getpid()) + "-" + std::to_string(n++));
    fs::create_directories(dir);
    ::chmod(dir.c_str(), 0700);
    return dir / "socket";
}

Json contract_cache() {
    return Json{
        {"enabled", true},
        {"listen", "127.0.0.1:4242"},
        {"held", true},
        {"held_by", "systemd"},
        {"error", nullptr},
        {"tfrc_files", Json::array({"/home/u/.terraform.d/hostkeeper.tfrc"})},
        {"hosts", Json::array({Json{{"host", "a.example"},
                                    {"source", "named"},
                                    {"routed", true},
                                    {"services", Json::array({"modules.v1", "providers.v1"})},
                                    {"reason", nullptr}},
                               Json{{"host", "xn--bcher-kva.example"},
                                    {"source", "named"},
                                    {"routed", false},
                                    {"services", Json::array()},
                                    {"reason", "discovery failed: no such host"}},
                               Json{{"host", "learned.example"},
                                    {"source", "learned"},
                                    {"routed", true},
                                    {"services", Json::array({"providers.v1"})},
                                    {"reason", nullptr}}})},
        {"requests", 12},
        {"refused", 1},
        {"archives",
         Json{{"count", 2}, {"bytes", 2048}, {"max_bytes", 4096}, {"downloads", 2}, {"hits", 5}}}};
}

}  // namespace

TEST_CASE("the capability: base64url without padding, 32 random bytes", "[cli][registry_cache]") {
    // RFC 4648 section 10's vectors, unpadded; then the two URL-safe letters.
    CHECK(b64("").empty());
    CHECK(b64("f") == "Zg");
    CHECK(b64("fo") == "Zm8");
    CHECK(b64("foo") == "Zm9v");
    CHECK(b64("foob") == "Zm9vYg");
    CHECK(b64("fooba") == "Zm9vYmE");
    CHECK(b64("foobar") == "Zm9vYmFy");
    CHECK(b64("\xfb\xff") == "-_8");
    const std::string a = cli::new_capability(), b = cli::new_capability();
    CHECK(std::regex_match(a, std::regex("[A-Za-z0-9_-]{43}")));
    CHECK(a != b);
}

TEST_CASE("listen addresses and the ports in a tfrc file", "[cli][registry_cache]") {
    CHECK(cli::loopback_port("127.0.0.1:8080") == 8080);
    CHECK(cli::loopback_port("127.0.0.1:65535") == 65535);
    CHECK_FALSE(cli::loopback_port("127.0.0.1:0"));
    CHECK_FALSE(cli::loopback_port("127.0.0.1:65536"));
    CHECK_FALSE(cli::loopback_port("0.0.0.0:8080"));
    CHECK_FALSE(cli::loopback_port("127.0.0.1:"));
    CHECK_FALSE(cli::loopback_port("127.0.0.1:80x"));
    const int port = cli::free_loopback_port();
    CHECK(port > 0);
    CHECK(port <= 65535);
    const std::string tfrc =
        "# Written by hostkeeperd for the registry cache\n"
        "host \"a\" {\n  services = {\n"
        "    \"modules.v1\" = \"http://127.0.0.1:4242/CAP/v1/a/modules/\"\n"
        "    \"providers.v1\" = \"http://127.0.0.1:4242/CAP/v1/a/providers/\"\n"
        "    \"tfe.v2\" = \"https://a/api/v2/\"\n  }\n}\n"
        "host \"b\" {\n  services = {\n"
        "    \"modules.v1\" = \"http://127.0.0.1:5151/CAP/v1/b/modules/\"\n  }\n}\n";
    CHECK(cli::tfrc_listener_ports(tfrc) == std::vector<int>{4242, 5151});
    CHECK(cli::tfrc_listener_ports("host \"x\" { services = {} }").empty());
}

TEST_CASE("hostkeeper status's registry cache line", "[cli][registry_cache]") {
    CHECK(cli::registry_cache_status_line(Json{{"enabled", false}}) ==
          "registry cache listener: off");
    CHECK(cli::registry_cache_status_line(contract_cache()) ==
          "registry cache listener: 127.0.0.1:4242 held (from systemd), 2 of 3 hosts routed, 12 "
          "requests (1 refused), 2 archives (2048 of 4096 bytes), 5 archive hits, 2 downloads");
    Json unheld = contract_cache();
    unheld["held"] = false;
    unheld["held_by"] = nullptr;
    unheld["error"] = "127.0.0.1:4242 is in use by another process";
    CHECK_THAT(cli::registry_cache_status_line(unheld),
               Catch::StartsWith("registry cache listener: 127.0.0.1:4242 NOT held: 127.0.0.1:4242 "
                                 "is in use by another process, "));
}

TEST_CASE("setup asks registry_cache_sync for the named hosts and reports each",
          "[cli][registry_cache]") {
    const fs::path socket = private_socket();
    Json reply = proto::make_ok();
    reply["registry_cache"] = contract_cache();
    FakeDaemon daemon(socket, reply);
    hostkeeper::helper::client::ClientOptions options;
    options.socket = socket;
    options.start_daemon = false;
    options.timeout = std::chrono::seconds(5);
    const Captured c = capture([&] {
        return cli::sync_registry_cache(options, {"a.example", "Bücher.example"}, false);
    });
    const Json request = daemon.request();
    CHECK(request.value("op", "") == "registry_cache_sync");
    CHECK(request.at("hosts") == Json::array({"a.example", "xn--bcher-kva.example"}));
    CHECK(c.status == 0);
    CHECK_THAT(c.out,
               Catch::Contains("registry cache: hostkeeperd holds 127.0.0.1:4242 (from systemd)"));
    CHECK_THAT(c.out, Catch::Contains("registry cache: a.example: routed through the cache "
                                      "(modules.v1, providers.v1)"));
    CHECK_THAT(c.out, Catch::Contains("registry cache: xn--bcher-kva.example: not routed: "
                                      "discovery failed: no such host"));
    CHECK_THAT(c.out, !Catch::Contains("learned.example"));  // not named
    fs::remove_all(socket.parent_path());
}

TEST_CASE("setup says when hostkeeperd does not hold the port, or does not know the op",
          "[cli][registry_cache]") {
    hostkeeper::helper::client::ClientOptions options;
    options.start_daemon = false;
    options.timeout = std::chrono::seconds(5);
    {
        options.socket = private_socket();
        Json cache = contract_cache();
        cache["held"] = false;
        cache["error"] = "127.0.0.1:4242 is in use by another process";
        Json reply = proto::make_ok();
        reply["registry_cache"] = cache;
        FakeDaemon daemon(*options.socket, reply);
        const Captured c = capture([&] { return cli::sync_registry_cache(options, {}, false); });
        CHECK(c.status == 1);
        CHECK_THAT(c.err,
                   Catch::Contains("hostkeeperd does not hold 127.0.0.1:4242: 127.0.0.1:4242 "
                                   "is in use by another process"));
        CHECK_THAT(c.out, Catch::Contains("learned.example: routed"));  // no hosts named: all
        CHECK_FALSE(daemon.request().contains("hosts"));
        fs::remove_all(options.socket->parent_path());
    }
    {
        options.socket = private_socket();
        Json reply = proto::make_ok();
        reply["registry_cache"] = Json{{"enabled", false}, {"listen", nullptr}, {"held", false}};
        FakeDaemon daemon(*options.socket, reply);
        const Captured c = capture([&] { return cli::sync_registry_cache(options, {}, false); });
        CHECK(c.status == 1);
        CHECK_THAT(c.err, Catch::Contains("the running hostkeeperd has the registry cache off"));
        CHECK_THAT(c.err, Catch::Contains("run 'hostkeeper stop', then this again"));
        fs::remove_all(options.socket->parent_path());
    }
    {
        options.socket = private_socket();
        FakeDaemon daemon(*options.socket, proto::make_error(proto::ErrorCode::unknown_op,
                                                             "unknown op \"registry_cache_sync\""));
        const Captured c = capture([&] { return cli::sync_registry_cache(options, {}, false); });
        CHECK(c.status == 1);
        CHECK_THAT(c.err, Catch::Contains("does not know the registry cache"));
        CHECK_THAT(c.err, Catch::Contains("hostkeeper stop"));
        fs::remove_all(options.socket->parent_path());
    }
}
