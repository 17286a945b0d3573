#pragma once
// The world of the HTTPS tests (discovery, registry): one real HTTPS server on
// loopback (support/tls_server) with a throw-away CA, and one hostkeeperd
// configured to trust it. Host names are NAME.localhost:PORT, which libcurl
// resolves to loopback by itself: no DNS, no /etc/hosts.
#include <stdlib.h>

#include <atomic>
#include <catch2/catch.hpp>
#include <chrono>
#include <ctime>
#include <filesystem>
#include <fstream>
#include <functional>
#include <map>
#include <memory>
#include <nlohmann/json.hpp>
#include <optional>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include "harness.hpp"
#include "helper/client/connection.hpp"
#include "tls_server.hpp"

namespace hostkeeper::it {

namespace fs = std::filesystem;
using Json = nlohmann::json;
using hostkeeper::test::Response;
using hostkeeper::test::TlsServer;

inline const std::string kDoc = "/.well-known/terraform.json";
inline const auto kNoCase = Catch::CaseSensitive::No;

// How many times `what` occurs in `text` (overlapping ones too).
inline std::size_t count_of(const std::string& text, const std::string& what) {
    std::size_t n = 0;
    for (auto at = text.find(what); at != std::string::npos; at = text.find(what, at + 1)) ++n;
    return n;
}

// The UTC time `from_now` from now, as RFC 3339 to the second
// ("2026-12-01T09:30:00Z"), as test servers and stored objects write it.
// Throws std::runtime_error for a time that is not 20 characters so written.
inline std::string utc_in(std::chrono::seconds from_now) {
    const std::time_t t =
        std::chrono::system_clock::to_time_t(std::chrono::system_clock::now() + from_now);
    std::tm utc{};
    ::gmtime_r(&t, &utc);
    char text[32];
    if (std::strftime(text, sizeof text, "%Y-%m-%dT%H:%M:%SZ", &utc) != 20)
        throw std::runtime_error("utc_in: not a 20-character UTC time");
    return text;
}

struct Ca {
    fs::path dir;
    fs::path ca() const { return dir / "ca.pem"; }
    fs::path cert() const { return dir / "server.pem"; }
    fs::path key() const { return dir / "server.key"; }
};

inline Ca make_ca(const std::string& name) {
    Ca made{test_root() / name};
    std::vector<std::string> argv{"/bin/bash",
                                  std::string(HK_SOURCE_DIR) + "/tests/support/make_ca.sh",
                                  made.dir.string(),
                                  "registry.localhost",
                                  "mirror.localhost",
                                  "cdn.localhost",
                                  "other.localhost",
                                  "auth.localhost",
                                  "xn--bcher-kva.localhost",
                                  "localhost",
                                  "127.0.0.1"};
    for (int i = 1; i <= 20; ++i) argv.push_back("h" + std::to_string(i) + ".localhost");
    const Result result = run(argv);
    if (result.exit_code != 0) throw std::runtime_error("make_ca.sh failed: " + result.err);
    return made;
}

// The CA the test servers' certificate is signed by (made once per group).
inline const Ca& test_ca() {
    static const Ca ca = make_ca("tls");
    return ca;
}

// Another CA, which signed nothing we serve.
inline const Ca& other_ca() {
    static const Ca ca = make_ca("tls-other");
    return ca;
}

// Sets (or unsets) environment variables of this process, which the daemon
// started afterwards inherits; restores them when it goes.
class ScopedEnv {
  public:
    explicit ScopedEnv(const std::map<std::string, std::optional<std::string>>& values) {
        for (const auto& [name, value] : values) {
            const char* old = ::getenv(name.c_str());
            saved_[name] = old != nullptr ? std::optional<std::string>(old) : std::nullopt;
            set(name, value);
        }
    }
    ScopedEnv(const ScopedEnv&) = delete;
    ScopedEnv& operator=(const ScopedEnv&) = delete;
    ~ScopedEnv() {
        for (const auto& [name, value] : saved_) set(name, value);
    }

  private:
    static void set(const std::string& name, const std::optional<std::string>& value) {
        if (value) {
            ::setenv(name.c_str(), value->c_str(), 1);
        } else {
            ::unsetenv(name.c_str());
        }
    }
    std::map<std::string, std::optional<std::string>> saved_;
};

// Neither a proxy nor the runner's CA settings reach the daemon unless a test
// says so.
inline std::map<std::string, std::optional<std::string>> clean_environment() {
    std::map<std::string, std::optional<std::string>> env;
    for (const char* name :
         {"SSL_CERT_FILE", "SSL_CERT_DIR", "CURL_CA_BUNDLE", "http_proxy", "HTTP_PROXY",
          "https_proxy", "HTTPS_PROXY", "all_proxy", "ALL_PROXY", "no_proxy", "NO_PROXY"}) {
        env[name] = std::nullopt;
    }
    return env;
}

inline std::string quoted(const std::string& text) {
    return "\"" + text + "\"";
}

// One HTTPS server and one hostkeeperd with a [discovery] configuration.
class World {
  public:
    World() : socket_(fresh_socket()) {}

    TlsServer server{test_ca().cert(), test_ca().key()};

    // NAME.localhost:PORT of the server.
    std::string host(const std::string& name = "registry") const {
        return name + ".localhost:" + std::to_string(server.port());
    }
    std::string url(const std::string& name, const std::string& path) const {
        return "https://" + host(name) + path;
    }
    // Answers `response` to GET /.well-known/terraform.json on NAME.localhost.
    void serve(const std::string& name, const Response& response) {
        server.route(name + ".localhost", kDoc, response);
    }
    std::size_t fetches(const std::string& name = "registry") const {
        return server.count(name + ".localhost", kDoc);
    }

    // Top-level settings of config.toml ("notify = false\n"), before its tables.
    std::string top_level;

    // Starts the daemon. `settings` override the [discovery] defaults of these
    // tests (timeout 5 s, ca_file the test CA); a value of "" removes the
    // setting. `extra` is appended to config.toml.
    void start(const std::map<std::string, std::string>& settings = {},
               const std::string& extra = "",
               const std::map<std::string, std::optional<std::string>>& env = {}) {
        std::map<std::string, std::string> discovery{{"timeout", quoted("5s")},
                                                     {"ca_file", quoted(test_ca().ca().string())}};
        for (const auto& [key, value] : settings) {
            if (value.empty()) {
                discovery.erase(key);
            } else {
                discovery[key] = value;
            }
        }
        std::string toml = top_level + "[discovery]\n";
        for (const auto& [key, value] : discovery) toml += key + " = " + value + "\n";
        toml += extra;
        const fs::path config = socket_.parent_path() / "config.toml";
        std::ofstream(config) << toml;
        config_text_ = toml;

        auto environment = clean_environment();
        for (const auto& [name, value] : env) environment[name] = value;
        const ScopedEnv scoped(environment);
        daemon_ = std::make_unique<Daemon>(socket_,
                                           std::vector<std::string>{"--config", config.string()});
    }

    // Stops the daemon (SIGTERM, waited for); start() starts the next.
    void stop_daemon() { daemon_.reset(); }
    const fs::path& socket() const { return socket_; }
    const std::string& config() const { return config_text_; }
    // What the running daemon logged so far.
    std::string daemon_log() const { return daemon_ ? daemon_->log() : std::string(); }

    // `hostkeeper --socket S ARGS...`
    Result cli(const std::vector<std::string>& args) const {
        std::vector<std::string> argv{bin("hostkeeper"), "--socket", socket_.string()};
        argv.insert(argv.end(), args.begin(), args.end());
        return run(argv);
    }
    Result discover(const std::vector<std::string>& args) const {
        std::vector<std::string> argv{"discover"};
        argv.insert(argv.end(), args.begin(), args.end());
        return cli(argv);
    }
    // `hostkeeper discover HOST --json [--refresh]`, which must succeed.
    Json discover_json(const std::string& host, bool refresh = false) const {
        std::vector<std::string> args{host, "--json"};
        if (refresh) args.push_back("--refresh");
        const Result result = discover(args);
        INFO("discover " << host << ": exit " << result.exit_code << "\nstdout: " << result.out
                         << "\nstderr: " << result.err << "\nconfig:\n"
                         << config_text_);
        REQUIRE(result.exit_code == 0);
        return Json::parse(result.out);
    }
    // The daemon's raw answer to one request over the socket.
    Json ask(Json request) const {
        request["v"] = 1;
        const hostkeeper::helper::client::Deadline deadline(std::chrono::seconds(30));
        int error = 0;
        auto connection = hostkeeper::helper::client::Connection::open(socket_, deadline, error);
        if (!connection) {
            throw std::runtime_error("cannot connect to the daemon: errno " +
                                     std::to_string(error));
        }
        return connection->round_trip(request, deadline);
    }
    Json ask_discover(const std::string& host, bool refresh = false) const {
        Json request{{"op", "discover"}, {"host", host}};
        if (refresh) request["refresh"] = true;
        return ask(request);
    }
    // status --json's "discovery" object.
    Json discovery_status() const { return status("discovery"); }
    // status --json's object `section`.
    Json status(const std::string& section) const {
        const Result result = cli({"status", "--json"});
        INFO(result.err);
        REQUIRE(result.exit_code == 0);
        const Json status = Json::parse(result.out);
        REQUIRE(status.contains(section));
        return status.at(section);
    }

  private:
    fs::path socket_;
    std::string config_text_;
    std::unique_ptr<Daemon> daemon_;  // after the server: stopped before it
};

// Stores a token for `host` through the helper (into the real keyring).
inline void store_token(const World& world, const std::string& host, const std::string& token) {
    const Result stored =
        helper(world.socket(), {"store", host}, R"({"token":")" + token + R"("})");
    INFO(stored.err);
    REQUIRE(stored.exit_code == 0);
}

inline void forget_token(const World& world, const std::string& host) {
    CHECK(helper(world.socket(), {"forget", host}).exit_code == 0);
}

// `ask` from `clients` threads released together: each one's answer, or
// what it threw, by client.
struct AtOnce {
    std::vector<Json> answers;
    std::vector<std::string> failures;
};
inline AtOnce at_once(int clients, const std::function<Json()>& ask) {
    AtOnce out{std::vector<Json>(static_cast<std::size_t>(clients)),
               std::vector<std::string>(static_cast<std::size_t>(clients))};
    std::atomic<int> ready{0};
    std::vector<std::thread> threads;
    for (int i = 0; i < clients; ++i) {
        threads.emplace_back([&, i] {
            const auto index = static_cast<std::size_t>(i);
            ++ready;
            while (ready.load() < clients) std::this_thread::yield();
            try {
                out.answers[index] = ask();
            } catch (const std::exception& e) {
                out.failures[index] = e.what();
            }
        });
    }
    for (auto& thread : threads) thread.join();
    return out;
}

}  // namespace hostkeeper::it
