// The registry cache's listener against the real hostkeeperd, spoken to over
// plain TCP sockets as any local process could: the Host header, the
// capability and the host's own token are each required; hostile clients
// (garbage, huge headers, a thousand connections, a stalled request,
// pipelining) cost the daemon nothing; another user's connection never
// reaches it; with the daemon stopped the port answers 503 and nothing else;
// a locked keyring serves nothing; registry_cache_sync routes what offers a
// registry. The registry port is a real hostkeeper-portd's, bound as root in
// a private network namespace (support/port-env.sh). The upstream registry is
// the suite's HTTPS server (https_world.hpp); what it received is what the
// assertions check.
#include <arpa/inet.h>
#include <netinet/in.h>
#include <openssl/sha.h>
#include <poll.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include <catch2/catch.hpp>
#include <random>
#include <thread>

#include "https_world.hpp"
#include "keyring_control.hpp"

using namespace hostkeeper::it;
using hostkeeper::test::json_response;
using hostkeeper::test::Request;
using namespace std::chrono_literals;

namespace {

const std::string kModule = "/v1/modules/acme/hello/null";

// The registry port of support/port-env.sh's hostkeeper-portd.
int registry_port() {
    const char* port = std::getenv("HK_REGISTRY_PORT");
    if (port == nullptr || std::getenv("HOSTKEEPER_PORT_SOCKET") == nullptr)
        throw std::runtime_error("run the registry cache tests through tests/support/port-env.sh");
    return std::stoi(port);
}

std::string random_capability() {
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

HttpAnswer parse_answer(const std::string& raw) {
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
    std::string capability = random_capability();
    fs::path xdg = socket().parent_path() / "xdg";
    fs::path tfrc = xdg / "terraform.d" / "hostkeeper.tfrc";

    std::string registry() const { return host("registry"); }
    std::string listen() const { return "127.0.0.1:" + std::to_string(port); }
    std::string versions_path(const std::string& host_name) const {
        return "/" + capability + "/v1/" + host_name + "/modules/acme/hello/null/versions";
    }
    std::size_t upstream_versions() const {
        return server.count("registry.localhost", kModule + "/versions");
    }

    CacheWorld() {
        serve("registry", json_response(R"({"modules.v1":"/v1/modules/"})"));
        server.route("registry.localhost", kModule + "/versions",
                     json_response(R"({"modules":[{"versions":[{"version":"1.0.0"}]}]})"));
    }

    void write_config(const std::vector<std::string>& hosts) {
        Json doc{{"version", 1},
                 {"capability", capability},
                 {"tfrc_files", Json::array({tfrc.string()})},
                 {"hosts", hosts}};
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

std::string bearer(const std::string& token) {
    return "Authorization: Bearer " + token + "\r\n";
}

}  // namespace

TEST_CASE("registry cache: a Host header other than the listener's is refused (403)",
          "[registry-cache-listener]") {
    CacheWorld w;
    w.start_cache({w.registry()});
    const std::string target = w.versions_path(w.registry());
    const std::string port = std::to_string(w.port);
    for (const std::string& host : std::vector<std::string>{
             "evil.example.com:" + port, "evil.example.com", "127.0.0.1", "127.0.0.2:" + port,
             "localhost.evil.example.com:" + port, "127.0.0.1:" + port + ".evil", std::string()}) {
        INFO("Host: " << host);
        const HttpAnswer answer = w.get(target, "", host);
        CHECK(answer.status == 403);
        CHECK_THAT(answer.body, !Catch::Contains(w.capability));
    }
    CHECK(w.upstream_versions() == 0);
    // The listener's own names are served.
    CHECK(w.get(target, "", "localhost:" + port).status == 200);
    CHECK(w.get(target).status == 200);
    CHECK(w.upstream_versions() == 1);
}

TEST_CASE("registry cache: a missing or wrong capability is a 404 and nothing goes upstream",
          "[registry-cache-listener]") {
    CacheWorld w;
    w.start_cache({w.registry()});
    const std::string rest = "/v1/" + w.registry() + "/modules/acme/hello/null/versions";
    std::string wrong = w.capability;
    wrong.back() = wrong.back() == 'A' ? 'B' : 'A';
    for (const std::string& target :
         std::vector<std::string>{rest, "/" + wrong + rest, "/" + w.capability.substr(0, 42) + rest,
                                  "/" + w.capability + "x" + rest, "/x/" + w.capability + rest}) {
        INFO(target);
        const HttpAnswer answer = w.get(target);
        CHECK(answer.status == 404);
        CHECK_THAT(answer.raw, !Catch::Contains(w.capability));
    }
    CHECK(w.upstream_versions() == 0);
    CHECK(w.server.requests().size() == 1);  // the start's discovery only
    const Json status = w.cache_status();
    CHECK(status.at("refused").get<int>() >= 5);
    CHECK_THAT(status.dump(), !Catch::Contains(w.capability));
}

TEST_CASE("registry cache: a host with a stored token needs that token; it goes upstream only",
          "[registry-cache-listener]") {
    CacheWorld w;
    w.start_cache({w.registry()});
    const std::string token = "registry-token-0123456789";
    const std::string other_token = "other-token-9876543210";
    store_token(w, w.registry(), token);
    store_token(w, w.host("other"), other_token);
    const std::string target = w.versions_path(w.registry());

    for (const std::string& headers : std::vector<std::string>{
             std::string(), bearer("wrong-token-0123456789"), bearer(other_token),
             bearer(token + "x"), bearer(token.substr(1)), "Authorization: " + token + "\r\n",
             "Authorization: Basic " + token + "\r\n"}) {
        INFO(headers);
        const HttpAnswer answer = w.get(target, headers);
        CHECK(answer.status == 401);
        CHECK_THAT(answer.raw, !Catch::Contains(token));
    }
    CHECK(w.upstream_versions() == 0);

    const HttpAnswer answer = w.get(target, bearer(token));
    CHECK(answer.status == 200);
    CHECK_THAT(answer.body, Catch::Contains("\"1.0.0\""));
    REQUIRE(w.upstream_versions() == 1);
    for (const Request& seen : w.server.requests()) {
        INFO(seen.host_header << seen.target);
        if (seen.path == kModule + "/versions") {
            CHECK(seen.host == "registry.localhost");
            CHECK(seen.authorization == "Bearer " + token);
        } else {
            CHECK(seen.authorization != "Bearer " + token);
        }
        CHECK(seen.authorization != "Bearer " + other_token);
    }
    CHECK_THAT(w.cache_status().dump(), !Catch::Contains(token));
}

TEST_CASE("registry cache: hostile clients cost the daemon nothing", "[registry-cache-listener]") {
    CacheWorld w;
    w.start_cache({w.registry()});
    const std::string target = w.versions_path(w.registry());
    REQUIRE(w.get(target).status == 200);

    SECTION("garbage bytes") {
        for (const std::string& junk : std::vector<std::string>{
                 std::string("\x00\x01\x02\xff\r\n\r\n", 8), std::string("HELLO\r\n\r\n"),
                 std::string(5000, 'x') + "\r\n\r\n", std::string("GET / HTTP/9.9\r\n\r\n"),
                 "GET " + target + " HTTP/1.1\r\nHost: " + w.listen() +
                     "\r\nContent-Length: 5\r\n\r\nhello",
                 "GET " + target + " HTTP/1.1\r\nHost: " + w.listen() +
                     "\r\nTransfer-Encoding: chunked\r\n\r\n5\r\nhello\r\n0\r\n\r\n"}) {
            Tcp tcp(w.port);
            tcp.send(junk);
            bool closed = false;
            const std::string answer = tcp.read_all(15s, &closed);
            INFO(answer);
            CHECK(closed);
            CHECK_THAT(answer, !Catch::Contains(" 200 "));
        }
    }
    SECTION("two Host headers: 400 (RFC 9112), and nothing goes upstream") {
        Tcp tcp(w.port);
        tcp.send("GET " + target + " HTTP/1.1\r\nHost: " + w.listen() + "\r\nHost: " + w.listen() +
                 "\r\nConnection: close\r\n\r\n");
        bool closed = false;
        const HttpAnswer answer = parse_answer(tcp.read_all(15s, &closed));
        INFO(answer.raw);
        CHECK(closed);
        CHECK(answer.status == 400);
        CHECK_THAT(answer.body, Catch::Contains("exactly one Host header"));
    }
    SECTION("a path that is not UTF-8 gets an answer") {
        for (const std::string& path :
             {"/" + w.capability + "/v1/" + w.registry() + "/modules/acme/h\xffllo/null/versions",
              std::string("/\xc3\x28/x"), "/" + w.capability + "/\xfe\xff"}) {
            Tcp tcp(w.port);
            tcp.send("GET " + path + " HTTP/1.1\r\nHost: " + w.listen() +
                     "\r\nConnection: close\r\n\r\n");
            bool closed = false;
            const HttpAnswer answer = parse_answer(tcp.read_all(15s, &closed));
            INFO(answer.raw);
            CHECK(closed);
            CHECK(answer.status >= 400);
            CHECK(answer.status < 500);
        }
    }
    SECTION("a header block over 16 KiB") {
        Tcp tcp(w.port);
        tcp.send("GET " + target + " HTTP/1.1\r\nHost: " + w.listen() +
                 "\r\nX-Filler: " + std::string(17 * 1024, 'a') + "\r\n\r\n");
        bool closed = false;
        const HttpAnswer answer = parse_answer(tcp.read_all(15s, &closed));
        CHECK(closed);
        CHECK(answer.status == 400);
    }
    SECTION("1,000 connections at once") {
        rlimit limit{};
        ::getrlimit(RLIMIT_NOFILE, &limit);
        if (limit.rlim_max < 1100) {
            WARN("RLIMIT_NOFILE hard limit " << limit.rlim_max << " < 1100: 500 connections");
        }
        limit.rlim_cur = limit.rlim_max;
        ::setrlimit(RLIMIT_NOFILE, &limit);
        const std::size_t count = limit.rlim_max >= 1100 ? 1000 : 500;
        std::vector<std::unique_ptr<Tcp>> open;
        for (std::size_t i = 0; i < count; ++i) {
            try {
                open.push_back(std::make_unique<Tcp>(w.port));
            } catch (const std::exception&) {
                break;  // the backlog is full: refused connections are fine
            }
        }
        CHECK(open.size() >= 256);
        CHECK(w.alive());
        open.clear();
    }
    SECTION("half a request, then silence: the read timeout closes it") {
        Tcp tcp(w.port);
        tcp.send("GET " + target + " HTTP/1.1\r\nHost: ");
        const auto start = std::chrono::steady_clock::now();
        bool closed = false;
        tcp.read_all(20s, &closed);
        CHECK(closed);
        CHECK(seconds_since(start) < 15.0);
        CHECK(seconds_since(start) > 5.0);
    }
    SECTION("pipelined keep-alive requests are answered in order") {
        Tcp tcp(w.port);
        const std::string one = "GET " + target + " HTTP/1.1\r\nHost: " + w.listen() + "\r\n\r\n";
        const std::string bad = "GET /nope HTTP/1.1\r\nHost: " + w.listen() + "\r\n\r\n";
        const std::string last =
            "GET " + target + " HTTP/1.1\r\nHost: " + w.listen() + "\r\nConnection: close\r\n\r\n";
        tcp.send(one + bad + one + last);
        bool closed = false;
        const std::string all = tcp.read_all(15s, &closed);
        CHECK(closed);
        std::vector<int> statuses;
        for (auto at = all.find("HTTP/1.1 "); at != std::string::npos;
             at = all.find("HTTP/1.1 ", at + 1))
            statuses.push_back(std::stoi(all.substr(at + 9, 3)));
        CHECK(statuses == std::vector<int>{200, 404, 200, 200});
    }
    CHECK(w.alive());
    // A connection over the limit is closed unanswered (status 0) until the
    // listener has seen the flood's connections close: ask again until then.
    int status = 0;
    for (int attempt = 0; attempt < 100 && status == 0; ++attempt) {
        if (attempt > 0) std::this_thread::sleep_for(200ms);
        try {
            status = w.get(target).status;
        } catch (const std::exception&) {
            status = 0;  // refused: the backlog is still full
        }
    }
    CHECK(status == 200);
}

TEST_CASE(
    "registry cache: the daemon registers for the registry port; stopped, the port "
    "answers 503 and nothing else",
    "[registry-cache-listener]") {
    CacheWorld w;
    w.start_cache({w.registry()});
    const Json status = w.cache_status();
    INFO(status.dump());
    CHECK(status.at("held") == true);
    CHECK(status.at("held_by") == "hostkeeper-portd");
    CHECK(status.at("listen") == w.listen());
    CHECK_THAT(read_file(w.tfrc), Catch::Contains("\"http://" + w.listen() + "/" + w.capability +
                                                  "/v1/" + w.registry() + "/modules/\""));

    // The helper hands out a routed host's token: Terraform sends it only to
    // the registry port, which no other user can hold.
    const std::string token = "routed-secret-0123456789";
    store_token(w, w.registry(), token);
    const Result got = helper(w.socket(), {"get", w.registry()});
    CHECK(got.exit_code == 0);
    CHECK_THAT(got.out, Catch::Contains(token));
    CHECK(w.get(w.versions_path(w.registry()), bearer(token)).status == 200);

    // The daemon stops; the port stays with hostkeeper-portd, which answers
    // (after waiting for a daemon to register) with the reason, and the
    // request with its token goes nowhere else.
    w.ask(Json{{"op", "stop"}});
    REQUIRE(wait_until([&] { return !w.alive(); }, 10s));
    const std::size_t before = w.upstream_versions();
    const HttpAnswer answer = w.get(w.versions_path(w.registry()), bearer(token));
    INFO(answer.raw);
    CHECK(answer.status == 503);
    CHECK_THAT(answer.head, Catch::Contains("hostkeeperd is not running for this user"));
    CHECK_THAT(answer.raw, !Catch::Contains(token));
    CHECK(w.upstream_versions() == before);
    // The tfrc file keeps its blocks: they name a port nobody else can bind.
    CHECK_THAT(read_file(w.tfrc), Catch::Contains("host \"" + w.registry() + "\""));
}

TEST_CASE("registry cache: a locked keyring serves nothing for a host with a token",
          "[registry-cache-listener]") {
    CacheWorld w;
    const std::string token = "locked-secret-0123456789";
    // Stored behind the daemon's back: nothing of it is cached in hostkeeperd.
    REQUIRE(secret_tool_store(w.registry(), R"({"token":")" + token + R"("})").exit_code == 0);
    w.start_cache({w.registry()});
    REQUIRE(lock_login_collection().exit_code == 0);
    struct Unlock {
        ~Unlock() { unlock_login_collection(); }
    } unlock;
    const HttpAnswer answer = w.get(w.versions_path(w.registry()), bearer(token));
    INFO(answer.raw);
    CHECK(answer.status == 503);
    CHECK_THAT(answer.raw, !Catch::Contains(token));
    CHECK_THAT(answer.raw, !Catch::Contains("\"1.0.0\""));
    CHECK(w.upstream_versions() == 0);
    CHECK(w.alive());
}

TEST_CASE("registry cache: registry_cache_sync routes a registry, not a host offering neither",
          "[registry-cache-listener]") {
    CacheWorld w;
    w.serve("other", json_response(R"({"tfe.v2":"/api/v2/"})"));
    w.serve(
        "auth",
        json_response(
            R"({"providers.v1":"/v1/providers/","tfe.v2":"/api/v2/","login.v1":{"client":"terraform-cli","grant_types":["authz_code"],"authz":"/oauth/authorize","token":"/oauth/token","ports":[10000,10010]}})"));
    w.start_cache({}, false);
    const Json reply =
        w.ask(Json{{"op", "registry_cache_sync"},
                   {"hosts", Json::array({w.registry(), w.host("other"), w.host("auth")})}});
    INFO(reply.dump());
    REQUIRE(reply.contains("registry_cache"));
    std::map<std::string, Json> hosts;
    for (const Json& entry : reply.at("registry_cache").at("hosts"))
        hosts[entry.at("host").get<std::string>()] = entry;
    REQUIRE(hosts.count(w.registry()) == 1);
    REQUIRE(hosts.count(w.host("other")) == 1);
    CHECK(hosts[w.registry()].at("routed") == true);
    CHECK(hosts[w.registry()].at("source") == "learned");
    CHECK(hosts[w.host("auth")].at("routed") == true);
    CHECK(hosts[w.host("other")].at("routed") == false);
    CHECK_FALSE(hosts[w.host("other")].at("reason").is_null());

    struct stat st {};
    REQUIRE(::stat(w.tfrc.c_str(), &st) == 0);
    CHECK((st.st_mode & 07777) == 0600);
    const std::string text = read_file(w.tfrc);
    INFO(text);
    const std::string base = "http://" + w.listen() + "/" + w.capability + "/v1/";
    CHECK_THAT(text, Catch::Contains("host \"" + w.registry() + "\" {"));
    CHECK_THAT(text, Catch::Contains("\"modules.v1\" = \"" + base + w.registry() + "/modules/\""));
    CHECK_THAT(text, Catch::Contains("host \"" + w.host("auth") + "\" {"));
    CHECK_THAT(text,
               Catch::Contains("\"providers.v1\" = \"" + base + w.host("auth") + "/providers/\""));
    CHECK_THAT(text, Catch::Contains("\"tfe.v2\" = \"https://" + w.host("auth") + "/api/v2/\""));
    CHECK_THAT(text, Catch::Contains("\"login.v1\" = {"));
    CHECK_THAT(text, !Catch::Contains(w.host("other")));
}

TEST_CASE("registry cache: a download location cannot add headers to the listener's answer",
          "[registry-cache-listener]") {
    CacheWorld w;
    // A 200 answer's "location" is JSON: it may hold CR and LF, which the
    // listener must not copy into its X-Terraform-Get header line.
    w.server.route(
        "registry.localhost", kModule + "/1.0.0/download",
        json_response(
            R"({"location":"git::https://example.com/x.git\r\nX-Injected: yes\r\n\r\nHTTP/1.1 200 OK"})"));
    w.server.route("registry.localhost", kModule + "/2.0.0/download",
                   json_response(R"({"location":"git::https://example.com/x.git?ref=v2"})"));
    w.start_cache({w.registry()});
    const std::string base =
        "/" + w.capability + "/v1/" + w.registry() + "/modules/acme/hello/null/";
    const HttpAnswer answer = w.get(base + "1.0.0/download");
    INFO(answer.raw);
    CHECK(answer.status == 502);
    CHECK_THAT(answer.raw, !Catch::Contains("\r\nX-Injected"));
    CHECK_THAT(answer.raw, !Catch::Contains("X-Terraform-Get"));
    // A location without them is passed through as given.
    const HttpAnswer good = w.get(base + "2.0.0/download");
    INFO(good.raw);
    CHECK(good.status == 204);
    CHECK_THAT(good.head,
               Catch::Contains("\r\nX-Terraform-Get: git::https://example.com/x.git?ref=v2"));
}

TEST_CASE("registry cache: the configured network mirror is served, its archive downloaded once",
          "[registry-cache-listener]") {
    CacheWorld w;
    // The smallest valid zip: an end-of-central-directory record, no files.
    const std::string zip = std::string("PK\x05\x06", 4) + std::string(18, '\0');
    std::array<unsigned char, SHA256_DIGEST_LENGTH> digest{};
    SHA256(reinterpret_cast<const unsigned char*>(zip.data()), zip.size(), digest.data());
    std::string sha;
    for (const unsigned char byte : digest) {
        static const char hex[] = "0123456789abcdef";
        sha.push_back(hex[byte >> 4]);
        sha.push_back(hex[byte & 15]);
    }
    const std::string provider = w.registry() + "/acme/thing/";
    const std::string file = "terraform-provider-thing_1.1.0_linux_amd64.zip";
    w.server.route("mirror.localhost", "/providers/" + provider + "index.json",
                   json_response(R"({"versions":{"1.1.0":{},"1.0.0":{}}})"));
    w.server.route("mirror.localhost", "/providers/" + provider + "1.1.0.json",
                   json_response(R"({"archives":{"linux_amd64":{"url":")" + file +
                                 R"(","hashes":["zh:)" + sha + R"("]}}})"));
    hostkeeper::test::Response package;
    package.body = zip;
    package.header("Content-Type", "application/zip");
    w.server.route("mirror.localhost", "/providers/" + provider + file, package);
    w.start_cache({w.registry()}, true,
                  "[registry]\nmirror_url = \"" + w.url("mirror", "/providers/") + "\"\n");

    const std::string base = "/" + w.capability + "/mirror/" + provider;
    const HttpAnswer index = w.get(base + "index.json");
    INFO(index.raw);
    REQUIRE(index.status == 200);
    const Json versions = Json::parse(index.body);
    CHECK(versions.at("versions").contains("1.1.0"));
    CHECK(versions.at("versions").contains("1.0.0"));

    const HttpAnswer version = w.get(base + "1.1.0.json");
    INFO(version.raw);
    REQUIRE(version.status == 200);
    const Json archive = Json::parse(version.body).at("archives").at("linux_amd64");
    const std::string url = archive.at("url").get<std::string>();
    // The archive is the listener's, keyed by its zh: hash; the hashes pass through.
    CHECK(url ==
          "http://" + w.listen() + "/" + w.capability + "/archives/providers/" + sha + "/" + file);
    CHECK(archive.at("hashes") == Json::array({"zh:" + sha}));

    const std::string path = url.substr(url.find('/', 7));
    const HttpAnswer first = w.get(path);
    const HttpAnswer second = w.get(path);
    CHECK(first.status == 200);
    CHECK(first.body == zip);
    CHECK(second.status == 200);
    CHECK(second.body == zip);
    CHECK(w.server.count("mirror.localhost", "/providers/" + provider + file) == 1);
    // An archive key nobody named is not fetched from anywhere.
    CHECK(w.get("/" + w.capability + "/archives/providers/" + std::string(64, 'a') + "/x.zip")
              .status == 404);
}

TEST_CASE("registry cache: another user's process never reaches the daemon",
          "[registry-cache-listener]") {
    if (::geteuid() != 0) {
        WARN("not root: cannot run a client as another user here");
        return;
    }
    CacheWorld w;
    w.start_cache({w.registry()});
    const std::string request = "GET " + w.versions_path(w.registry()) +
                                " HTTP/1.1\r\nHost: " + w.listen() +
                                "\r\nConnection: close\r\n\r\n";
    // uid 65534 (nobody) connects, sends a well-formed request with the
    // capability, and prints whatever comes back.
    const std::string client =
        "import socket, sys\n"
        "s = socket.create_connection(('127.0.0.1', int(sys.argv[1])))\n"
        "s.sendall(sys.argv[2].encode())\n"
        "s.settimeout(10)\n"
        "data = b''\n"
        "try:\n"
        "    while True:\n"
        "        chunk = s.recv(65536)\n"
        "        if not chunk: break\n"
        "        data += chunk\n"
        "except OSError:\n"
        "    pass\n"
        "sys.stdout.write(repr(data))\n";
    const Result other =
        run({"/usr/bin/setpriv", "--reuid=65534", "--regid=65534", "--clear-groups",
             "/usr/bin/python3", "-c", client, std::to_string(w.port), request});
    INFO("exit " << other.exit_code << " out " << other.out << " err " << other.err);
    CHECK(other.exit_code == 0);
    // hostkeeper-portd's own answer for a user without a daemon: never this daemon's.
    CHECK_THAT(other.out, Catch::StartsWith("b'HTTP/1.1 503 "));
    CHECK_THAT(other.out, !Catch::Contains("1.0.0"));
    CHECK(w.upstream_versions() == 0);
    // The daemon's own user is served.
    CHECK(w.get(w.versions_path(w.registry())).status == 200);
    CHECK(w.upstream_versions() == 1);
}

TEST_CASE("registry cache: a host's block follows its discovery document",
          "[registry-cache-listener]") {
    CacheWorld w;
    w.start_cache({w.registry()});
    const auto block = [&] { return read_file(w.tfrc); };
    REQUIRE_THAT(block(), Catch::Contains("host \"" + w.registry() + "\""));
    CHECK_THAT(block(), !Catch::Contains("tfe.v2"));

    // The host now offers tfe.v2 too: the next request that sees the new
    // document (after a flush) rewrites the block with it, at its real URL.
    w.serve("registry", json_response(R"({"modules.v1":"/v1/modules/","tfe.v2":"/api/v2/"})"));
    w.ask(Json{{"op", "flush"}});
    CHECK(w.get(w.versions_path(w.registry())).status == 200);
    CHECK(wait_until([&] { return block().find("tfe.v2") != std::string::npos; }, 10s));
    CHECK_THAT(block(), Catch::Contains("\"https://" + w.registry() + "/api/v2/\""));

    // It stops offering a registry: the block goes, the host is no longer routed.
    w.serve("registry", json_response(R"({"tfe.v2":"/api/v2/"})"));
    w.ask(Json{{"op", "flush"}});
    CHECK(w.get(w.versions_path(w.registry())).status == 404);
    CHECK(wait_until([&] { return block().find("host \"") == std::string::npos; }, 10s));
    CHECK_FALSE(w.routed_now(w.registry()));
}
