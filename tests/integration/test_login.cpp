// `hostkeeper login` through the real daemon and the real gnome-keyring,
// against a login.v1 authorization server (fake_login.hpp) issuing access
// tokens that live 3 seconds with refresh tokens: the test plays the
// browser (curl follows the printed URL). The token is stored and valid,
// the refresh token never reaches the helper's `get`, a get after the
// lifetime gets a refreshed token (never an expired one), a revoked
// refresh token gives a clear error; stray requests to the loopback port
// (another state, another path, no HTTP) are answered and ignored, another
// user's connections are refused unread, and an error redirect with the
// login's state ends the login.
#include <unistd.h>

#include <catch2/catch.hpp>
#include <chrono>
#include <string>
#include <thread>

#include "fake_login.hpp"
#include "https_world.hpp"

namespace test_login {

using namespace hostkeeper::it;

namespace {

constexpr int kLifetime = 3;
const char* const kCurl = "/usr/bin/curl";  // the browser (packaging/deps.sh test)

// The first line `hostkeeper login` prints on its standard output (the URL).
std::string printed_url(const Spawned& login) {
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(20);
    while (std::chrono::steady_clock::now() < deadline) {
        char buffer[4096] = {};
        const ssize_t n = ::pread(login.out_fd, buffer, sizeof buffer - 1, 0);
        const std::string text(buffer, n > 0 ? static_cast<std::size_t>(n) : 0);
        if (const std::size_t end = text.find('\n'); end != std::string::npos)
            return text.substr(0, end);
        std::this_thread::sleep_for(std::chrono::milliseconds(20));
    }
    return {};
}

Spawned start_login(const World& world, const std::string& host) {
    return spawn({bin("hostkeeper"), "--socket", world.socket().string(), "login", host,
                  "--no-browser", "--wait", "30"});
}

// The browser: follows the authorization URL to the loopback redirect.
Result browse(const std::string& url) {
    return run({kCurl, "-sS", "-L", "--max-time", "20", "--cacert", test_ca().ca().string(), url});
}

// A plain GET of `url` (no redirect followed): its body, a newline, its status.
Result fetch(const std::string& url) {
    return run({kCurl, "-sS", "--max-time", "20", "-w", "\n%{http_code}", url});
}

// The state the authorization URL carries.
std::string query_state(const std::string& url) {
    return FakeLogin::form(url.substr(url.find('?') + 1)).at("state");
}

// python3 -c kRawClient PORT BYTES SECONDS: connects to 127.0.0.1:PORT,
// sends BYTES (none when empty), and prints what comes back within SECONDS.
const char* const kRawClient =
    "import socket, sys\n"
    "s = socket.create_connection(('127.0.0.1', int(sys.argv[1])))\n"
    "s.sendall(sys.argv[2].encode('latin-1'))\n"
    "s.settimeout(float(sys.argv[3]))\n"
    "data = b''\n"
    "try:\n"
    "    while True:\n"
    "        chunk = s.recv(65536)\n"
    "        if not chunk: break\n"
    "        data += chunk\n"
    "except OSError:\n"
    "    pass\n"
    "sys.stdout.write(repr(data))\n";

// The stored credentials as the Terraform helper's `get` prints them.
Json helper_get(const World& world, const std::string& host) {
    const Result got = helper(world.socket(), {"get", host});
    INFO(got.err);
    REQUIRE(got.exit_code == 0);
    return Json::parse(got.out);
}

bool api_accepts(const World& world, const std::string& host, const std::string& token) {
    const Result r = run({kCurl, "-sS", "-o", "/dev/null", "-w", "%{http_code}", "--cacert",
                          test_ca().ca().string(), "-H", "Authorization: Bearer " + token,
                          world.url("auth", "/api/whoami")});
    (void)host;
    return r.out == "200";
}

// Logs in to `host` end to end; the stored access token.
std::string log_in(const World& world, const std::string& host) {
    Spawned login = start_login(world, host);
    const std::string url = printed_url(login);
    REQUIRE_THAT(url, Catch::StartsWith(world.url("auth", "/oauth/authorize?")));
    const Result browser = browse(url);
    INFO(browser.out << browser.err);
    CHECK(browser.exit_code == 0);
    CHECK_THAT(browser.out, Catch::Contains("authorization received"));
    const Result done = login.wait();
    INFO(done.out << done.err << world.daemon_log());
    REQUIRE(done.exit_code == 0);
    CHECK_THAT(done.out, Catch::Contains("logged in") && Catch::Contains("refreshes it"));
    return helper_get(world, host).at("token").get<std::string>();
}

void wait_past(std::chrono::steady_clock::time_point since) {
    std::this_thread::sleep_until(since + std::chrono::seconds(kLifetime) +
                                  std::chrono::milliseconds(300));
}

}  // namespace

TEST_CASE(
    "login stores a token that is refreshed before it expires, never handing out the "
    "refresh token",
    "[login]") {
    World world;
    FakeLogin server(world, "auth", kLifetime);
    world.start();
    const std::string host = world.host("auth");

    const std::string first = log_in(world, host);
    // Once log_in returns, the server and the daemon have both started the
    // token's lifetime: past it from here, both count it expired.
    const auto issued = std::chrono::steady_clock::now();
    CHECK(api_accepts(world, host, first));
    const Result raw = helper(world.socket(), {"get", host});
    CHECK(raw.out.find("ref-tok-") == std::string::npos);
    CHECK(raw.out.find("login") == std::string::npos);
    CHECK(Json::parse(raw.out).contains("expires_at"));
    const Json listed = world.ask({{"op", "list"}});
    CHECK(listed.dump().find("ref-tok-") == std::string::npos);

    // Past the first token's lifetime: the get waits for the refresh and
    // gets a new token the server accepts; the expired one is never served.
    wait_past(issued);
    CHECK_FALSE(server.valid(first));
    const std::string second = helper_get(world, host).at("token").get<std::string>();
    CHECK(second != first);
    CHECK(server.valid(second));
    CHECK(server.refreshes() == 1);

    // `hostkeeper login --refresh` forces one, with the rotated refresh token.
    const Result forced = world.cli({"login", "--refresh", host});
    INFO(forced.out << forced.err);
    CHECK(forced.exit_code == 0);
    CHECK(server.refreshes() == 2);
    const std::string third = helper_get(world, host).at("token").get<std::string>();
    CHECK(third != second);
    CHECK(server.valid(third));

    // No token, access or refresh, in the daemon's log.
    const std::string log = world.daemon_log();
    CHECK(log.find("acc-tok-") == std::string::npos);
    CHECK(log.find("ref-tok-") == std::string::npos);
}

TEST_CASE("a refused refresh withholds the expired token and says to log in again", "[login]") {
    World world;
    FakeLogin server(world, "auth", kLifetime);
    world.start();
    const std::string host = world.host("auth");
    (void)log_in(world, host);
    const auto issued = std::chrono::steady_clock::now();

    server.revoke_refresh_tokens();
    wait_past(issued);
    const Json answer = world.ask({{"op", "get"}, {"host", host}});
    INFO(answer.dump() << world.daemon_log());
    CHECK(answer.value("found", true) == false);
    CHECK_THAT(answer.dump(),
               Catch::Contains("invalid_grant") && Catch::Contains("run hostkeeper login " + host));
    const Json status = world.ask({{"op", "status"}});
    CHECK(status.at("credentials").at("refresh_failures").contains(host));
    CHECK_THAT(world.cli({"status"}).out, Catch::Contains("token refresh failed: " + host));

    const Result forced = world.cli({"login", "--refresh", host});
    CHECK(forced.exit_code == 1);
    CHECK_THAT(forced.err, Catch::Contains("the refresh token is not valid"));

    // Logging in again mends it.
    const std::string fresh = log_in(world, host);
    CHECK(server.valid(fresh));
}

TEST_CASE("login answers stray requests to its port and waits for its own redirect", "[login]") {
    World world;
    FakeLogin server(world, "auth", kLifetime);
    world.start();
    const std::string host = world.host("auth");

    Spawned login = start_login(world, host);
    const std::string url = printed_url(login);
    REQUIRE_FALSE(url.empty());
    const std::string redirect_uri =
        FakeLogin::form(url.substr(url.find('?') + 1)).at("redirect_uri");
    const std::string port = redirect_uri.substr(
        redirect_uri.rfind(':') + 1, redirect_uri.rfind('/') - redirect_uri.rfind(':') - 1);
    // A connection that sends nothing stays open through the rest of the login.
    Spawned idle = spawn({"/usr/bin/python3", "-c", kRawClient, port, "", "30"});

    const Result forged = fetch(redirect_uri + "?code=code-forged&state=not-the-state");
    CHECK_THAT(forged.out,
               Catch::EndsWith("\n400") && Catch::Contains("not this login's redirect"));
    CHECK_THAT(fetch(redirect_uri + "?error=access_denied&state=not-the-state").out,
               Catch::EndsWith("\n400") && Catch::Contains("state is not this login's"));
    CHECK_THAT(fetch(redirect_uri + "?state=" + query_state(url)).out,
               Catch::EndsWith("\n400") && Catch::Contains("no authorization code"));
    CHECK_THAT(fetch("http://localhost:" + port + "/favicon.ico").out, Catch::EndsWith("\n404"));
    const Result garbage =
        run({"/usr/bin/python3", "-c", kRawClient, port, "\x16\x03\x01 not http\r\n\r\n", "10"});
    CHECK_THAT(garbage.out, Catch::StartsWith("b'HTTP/1.1 400 ") && Catch::Contains("not HTTP"));
    const bool as_root = ::geteuid() == 0;
    if (as_root) {
        // Another user (nobody) who read this login's state (the browser's
        // command line shows it) and sends a code of its own is refused
        // unread: the login neither trades that code nor ends.
        const Result stranger =
            run({"/usr/bin/setpriv", "--reuid=65534", "--regid=65534", "--clear-groups", kCurl,
                 "-s", "--max-time", "20", "-w", "%{http_code}\n", "-o", "/dev/null",
                 redirect_uri + "?code=code-forged&state=" + query_state(url)});
        INFO(stranger.out << stranger.err);
        CHECK((stranger.out == "403\n" || stranger.out == "000\n"));
    } else {
        WARN("not root: no request from another user");
    }

    // The real redirect still logs in; only its code was traded.
    const Result browser = browse(url);
    CHECK_THAT(browser.out, Catch::Contains("authorization received"));
    const Result done = login.wait();
    INFO(done.out << done.err << world.daemon_log());
    CHECK(done.exit_code == 0);
    CHECK_THAT(done.err, Catch::Contains("ignored a request to port " + port));
    if (as_root)
        CHECK_THAT(done.err,
                   Catch::Contains("refused a connection to port " + port + " from another user"));
    CHECK(server.issued() == 1);
    CHECK(server.valid(helper_get(world, host).at("token").get<std::string>()));
    (void)idle.wait();
}

TEST_CASE(
    "an error redirect with this login's state ends it, and a host without login.v1 is refused",
    "[login]") {
    World world;
    FakeLogin server(world, "auth", kLifetime);
    world.serve("registry", hostkeeper::test::json_response(R"({"modules.v1":"/m/"})"));
    world.start();
    const std::string host = world.host("auth");

    Spawned login = start_login(world, host);
    const std::string url = printed_url(login);
    REQUIRE_FALSE(url.empty());
    const std::string redirect_uri =
        FakeLogin::form(url.substr(url.find('?') + 1)).at("redirect_uri");
    const Result refused = fetch(
        redirect_uri + "?error=access_denied&error_description=not+you&state=" + query_state(url));
    CHECK_THAT(refused.out, Catch::EndsWith("\n400") && Catch::Contains("login failed"));
    const Result done = login.wait();
    CHECK(done.exit_code == 1);
    CHECK_THAT(done.err, Catch::Contains("refused the login: access_denied: not you"));
    CHECK(server.issued() == 0);
    CHECK(world.ask({{"op", "get"}, {"host", host}}).value("found", true) == false);

    const Result plain = world.cli({"login", world.host("registry"), "--no-browser"});
    CHECK(plain.exit_code == 3);
    CHECK_THAT(plain.err, Catch::Contains("offers no login.v1"));
}

}  // namespace test_login
