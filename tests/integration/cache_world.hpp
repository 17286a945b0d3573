#pragma once
// The registry cache's test world, shared by the registry cache's
// integration tests: the registry port of support/port-env.sh's
// hostkeeper-portd, plain TCP connections to it, and CacheWorld (an
// upstream registry at registry.localhost and a hostkeeperd whose
// registry-cache.json names it).
#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <catch2/catch.hpp>
#include <chrono>
#include <cstdlib>
#include <fstream>
#include <optional>
#include <random>
#include <stdexcept>
#include <string>
#include <vector>

#include "https_world.hpp"

namespace hostkeeper::it {

using namespace std::chrono_literals;

inline const std::string kModule = "/v1/modules/acme/hello/null";

// The registry port of support/port-env.sh's hostkeeper-portd.
inline int registry_port() {
    const char* port = std::getenv("HK_REGISTRY_PORT");
    if (port == nullptr || std::getenv("HOSTKEEPER_PORT_SOCKET") == nullptr)
        throw std::runtime_error("run the registry cache tests through tests/support/port-env.sh");
    return std::stoi(port);
}

inline std::string random_capability() {
    static const char alphabet[] =
        "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_";
    std::random_device device;
    std::string out;
    for (int i = 0; i < 43; ++i) out.push_back(alphabet[device() % 64]);
    return out;
}

// A TCP connection to 127.0.0.1:PORT, bytes in and out by hand.
class Tcp {
  public:
    explicit Tcp(int port) {
        fd_ = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
        sockaddr_in addr{};
        addr.sin_family = AF_INET;
        addr.sin_port = htons(static_cast<std::uint16_t>(port));
        addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
        if (fd_ < 0 || ::connect(fd_, reinterpret_cast<const sockaddr*>(&addr), sizeof addr) != 0)
            throw std::runtime_error("cannot connect to 127.0.0.1:" + std::to_string(port));
    }
    Tcp(const Tcp&) = delete;
    Tcp& operator=(const Tcp&) = delete;
    ~Tcp() {
        if (fd_ >= 0) ::close(fd_);
    }
    bool send(const std::string& bytes) {
        std::size_t done = 0;
        while (done < bytes.size()) {
            const ssize_t n = ::send(fd_, bytes.data() + done, bytes.size() - done, MSG_NOSIGNAL);
            if (n <= 0) return false;
            done += static_cast<std::size_t>(n);
        }
        return true;
    }
    // Everything until the peer closes or `limit` passes; `closed` says which.
    std::string read_all(std::chrono::milliseconds limit, bool* closed = nullptr) {
        std::string out;
        const auto until = std::chrono::steady_clock::now() + limit;
        for (;;) {
            const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
                until - std::chrono::steady_clock::now());
            if (left.count() <= 0) break;
            pollfd p{fd_, POLLIN, 0};
            if (::poll(&p, 1, static_cast<int>(left.count())) <= 0) break;
            char buffer[65536];
            const ssize_t n = ::recv(fd_, buffer, sizeof buffer, 0);
            if (n <= 0) {
                if (closed != nullptr) *closed = true;
                return out;
            }
            out.append(buffer, static_cast<std::size_t>(n));
        }
        if (closed != nullptr) *closed = false;
        return out;
    }

  private:
    int fd_ = -1;
};

struct HttpAnswer {
    int status = 0;
    std::string head;  // status line and headers
    std::string body;
    std::string raw;
};

inline HttpAnswer parse_answer(const std::string& raw) {
    HttpAnswer answer;
    answer.raw = raw;
    const auto end = raw.find("\r\n\r\n");
    answer.head = raw.substr(0, end);
    answer.body = end == std::string::npos ? "" : raw.substr(end + 4);
    if (raw.rfind("HTTP/1.1 ", 0) == 0) answer.status = std::stoi(raw.substr(9, 3));
    return answer;
}

// The registry cache world: an upstream registry at registry.localhost
// (modules.v1) and a hostkeeperd whose registry-cache.json names it.
struct CacheWorld : World {
    int port = registry_port();
    // Written into registry-cache.json as older setups did, when set.
    std::optional<std::string> old_capability;
    fs::path xdg = socket().parent_path() / "xdg";
    fs::path tfrc = xdg / "terraform.d" / "hostkeeper.tfrc";

    std::string registry() const { return host("registry"); }
    std::string listen() const { return "127.0.0.1:" + std::to_string(port); }
    std::string versions_path(const std::string& host_name) const {
        return "/v1/" + host_name + "/modules/acme/hello/null/versions";
    }
    std::size_t upstream_versions() const {
        return server.count("registry.localhost", kModule + "/versions");
    }

    CacheWorld() {
        serve("registry", test::json_response(R"({"modules.v1":"/v1/modules/"})"));
        server.route("registry.localhost", kModule + "/versions",
                     test::json_response(R"({"modules":[{"versions":[{"version":"1.0.0"}]}]})"));
    }

    void write_config(const std::vector<std::string>& hosts) {
        Json doc{{"version", 1}, {"tfrc_files", Json::array({tfrc.string()})}, {"hosts", hosts}};
        if (old_capability) doc["capability"] = *old_capability;
        const fs::path file = xdg / "config" / "hostkeeper" / "registry-cache.json";
        fs::create_directories(file.parent_path());
        std::ofstream(file) << doc.dump();
        fs::permissions(file, static_cast<fs::perms>(0600), fs::perm_options::replace);
    }

    // Starts hostkeeperd with the cache naming `hosts`; waits until each is routed.
    void start_cache(const std::vector<std::string>& hosts, bool wait_routed = true,
                     const std::string& extra_config = "") {
        write_config(hosts);
        start({}, extra_config,
              {{"XDG_CONFIG_HOME", (xdg / "config").string()},
               {"XDG_STATE_HOME", (xdg / "state").string()},
               {"XDG_CACHE_HOME", (xdg / "cache").string()}});
        if (!wait_routed) return;
        for (const std::string& h : hosts) {
            const bool routed = wait_until([&] { return routed_now(h); }, 15s);
            INFO(h << ": " << cache_status().dump());
            REQUIRE(routed);
        }
    }
    bool routed_now(const std::string& h) const {
        const Json status = cache_status();
        for (const Json& entry : status.at("hosts")) {
            if (entry.at("host") == h && entry.at("routed") == true) return true;
        }
        return false;
    }
    Json cache_status() const { return ask(Json{{"op", "status"}}).at("registry_cache"); }
    bool alive() const {
        try {
            return cache_status().at("enabled") == true;
        } catch (const std::exception&) {
            return false;
        }
    }

    // One request on a connection of its own (Connection: close).
    HttpAnswer get(const std::string& target, const std::string& extra_headers = "",
                   const std::optional<std::string>& host_header = std::nullopt) const {
        Tcp tcp(port);
        tcp.send("GET " + target + " HTTP/1.1\r\nHost: " + host_header.value_or(listen()) + "\r\n" +
                 extra_headers + "Connection: close\r\n\r\n");
        return parse_answer(tcp.read_all(15s));
    }
};

inline std::string bearer(const std::string& token) {
    return "Authorization: Bearer " + token + "\r\n";
}

}  // namespace hostkeeper::it
