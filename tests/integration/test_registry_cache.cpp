// The registry cache's listener against the real hostkeeperd, spoken to over
// plain TCP sockets as any local process could: the URLs hold no secret;
// the Host header and the host's own token are each required, a web
// browser's request (Origin, Sec-Fetch-*) is refused, an older setup's
// capability-prefixed URL is a 410 and an upgrade rewrites its host blocks;
// hostile clients
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
#include <signal.h>
#include <sys/mount.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include <catch2/catch.hpp>
#include <cerrno>
#include <cstring>
#include <fstream>
#include <random>
#include <thread>

#include "cache_world.hpp"
#include "https_world.hpp"
#include "keyring_control.hpp"
#include "raw_client.hpp"

namespace test_registry_cache {

using namespace hostkeeper::it;
using hostkeeper::test::json_response;
using hostkeeper::test::Request;
using namespace std::chrono_literals;

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
    }
    CHECK(w.upstream_versions() == 0);
    // The listener's own names are served.
    CHECK(w.get(target, "", "localhost:" + port).status == 200);
    CHECK(w.get(target).status == 200);
    CHECK(w.upstream_versions() == 1);
}

TEST_CASE("registry cache: a web browser's request (Origin, Sec-Fetch-*) is refused (403)",
          "[registry-cache-listener]") {
    CacheWorld w;
    w.start_cache({w.registry()});
    const std::string target = w.versions_path(w.registry());
    // What browsers send with a page's fetch(), a form, a link or an <img>.
    for (const std::string& header : {
             std::string("Origin: https://evil.example.com\r\n"),
             std::string("Origin: null\r\n"),
             std::string("Sec-Fetch-Site: cross-site\r\n"),
             std::string("sec-fetch-mode: no-cors\r\n"),
             std::string("Sec-Fetch-Dest: image\r\n"),
             std::string("SEC-FETCH-USER: ?1\r\n"),
         }) {
        INFO(header);
        const HttpAnswer answer = w.get(target, header);
        INFO(answer.raw);
        CHECK(answer.status == 403);
        CHECK_THAT(answer.head, Catch::Contains("a web browser's request"));
    }
    CHECK(w.upstream_versions() == 0);
    CHECK(w.cache_status().at("refused").get<int>() >= 6);
    // Terraform's client (Go's net/http) sends neither: served.
    CHECK(w.get(target, "User-Agent: Go-http-client/1.1\r\nAccept-Encoding: gzip\r\n").status ==
          200);
    CHECK(w.upstream_versions() == 1);
}

TEST_CASE("registry cache: an older setup's capability-prefixed URL is a 410, never served",
          "[registry-cache-listener]") {
    CacheWorld w;
    w.old_capability = random_capability();
    w.start_cache({w.registry()});
    const std::string rest = w.versions_path(w.registry());
    const std::string old = "/" + *w.old_capability;
    std::string wrong = old;
    wrong.back() = wrong.back() == 'A' ? 'B' : 'A';
    const std::string archive = "/archives/providers/" + std::string(64, 'a') + "/x.zip";
    // The capability still in registry-cache.json is no key to anything.
    for (const std::string& target : {old + rest, wrong + rest, old + archive}) {
        INFO(target);
        const HttpAnswer answer = w.get(target);
        INFO(answer.raw);
        CHECK(answer.status == 410);
        CHECK_THAT(answer.head, Catch::Contains("the registry cache's URLs changed: run "
                                                "`terraform init` again"));
    }
    // Below two extra segments it is no route at all.
    CHECK(w.get("/x/" + *w.old_capability + rest).status == 404);
    CHECK(w.upstream_versions() == 0);
    CHECK(w.get(rest).status == 200);
    CHECK(w.upstream_versions() == 1);
}

TEST_CASE(
    "registry cache: an upgrade from a file with a capability rewrites the host blocks; no "
    "secret stays in the files or the status",
    "[registry-cache-listener]") {
    CacheWorld w;
    w.old_capability = random_capability();
    // The host block an older hostkeeperd wrote, its URLs below the capability.
    fs::create_directories(w.tfrc.parent_path());
    const std::string old_base = "http://" + w.listen() + "/" + *w.old_capability + "/v1/";
    std::ofstream(w.tfrc) << "# Written by hostkeeperd for the registry cache (hostkeeper setup "
                             "--registry-cache).\n\nhost \""
                          << w.registry() << "\" {\n  services = {\n    \"modules.v1\" = \""
                          << old_base << w.registry() << "/modules/\"\n  }\n}\n";
    w.start_cache({w.registry()});
    const std::string fresh =
        "\"modules.v1\" = \"http://" + w.listen() + "/v1/" + w.registry() + "/modules/\"";
    CHECK(wait_until([&] { return read_file(w.tfrc).find(fresh) != std::string::npos; }, 10s));
    const std::string text = read_file(w.tfrc);
    INFO(text);
    CHECK_THAT(text, !Catch::Contains(*w.old_capability));
    const Json status = w.cache_status();
    CHECK_THAT(status.dump(), !Catch::Contains(*w.old_capability));
    CHECK_THAT(w.ask(Json{{"op", "status"}}).dump(), !Catch::Contains(*w.old_capability));
    // What Terraform now reads is served.
    CHECK(w.get(w.versions_path(w.registry())).status == 200);
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
             {"/v1/" + w.registry() + "/modules/acme/h\xffllo/null/versions",
              std::string("/\xc3\x28/x"), std::string("/\xfe\xff")}) {
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
                 "\r\nX-Filler: " + std::string(std::size_t{17} * 1024, 'a') + "\r\n\r\n");
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
        bool closed = false;
        tcp.read_all(1s, &closed);
        CHECK_FALSE(closed);  // a slow client is given its time
        tcp.read_all(20s, &closed);
        CHECK(closed);
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
    CHECK_THAT(read_file(w.tfrc),
               Catch::Contains("\"http://" + w.listen() + "/v1/" + w.registry() + "/modules/\""));

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
    // The lock as the daemon has seen it (its cache follows the keyring's
    // signals, which reach it after the lock returned).
    REQUIRE(lock_login_collection_seen_by(w.socket()).exit_code == 0);
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
    const std::string base = "http://" + w.listen() + "/v1/";
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
    const std::string base = "/v1/" + w.registry() + "/modules/acme/hello/null/";
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

    const std::string base = "/mirror/" + provider;
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
    CHECK(url == "http://" + w.listen() + "/archives/providers/" + sha + "/" + file);
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
    CHECK(w.get("/archives/providers/" + std::string(64, 'a') + "/x.zip").status == 404);
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
    // uid 65534 (nobody) connects, sends a well-formed request for a routed
    // host, and prints whatever comes back.
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

namespace {

// A tiny tmpfs on `dir`, filled to the last byte but `room`. Only in a private mount
// namespace (tests/CMakeLists.txt runs this group under unshare -m with
// private propagation): the mount is gone with the namespace. Lazily
// unmounted when done.
class FullTmpfs {
  public:
    explicit FullTmpfs(const fs::path& dir, std::uintmax_t room = 0) : dir_(dir) {
        fs::create_directories(dir_);
        if (::mount("tmpfs", dir_.c_str(), "tmpfs", 0, "size=64k,mode=0700") != 0)
            throw std::runtime_error("mount -t tmpfs on " + dir_.string() + ": " +
                                     std::strerror(errno));
        std::ofstream filler(dir_ / "filler", std::ios::binary);
        const std::string block(4096, 'f');
        while (filler.write(block.data(), static_cast<std::streamsize>(block.size())))
            filler.flush();
        filler.close();
        if (room > 0) fs::resize_file(dir_ / "filler", fs::file_size(dir_ / "filler") - room);
    }
    FullTmpfs(const FullTmpfs&) = delete;
    FullTmpfs& operator=(const FullTmpfs&) = delete;
    ~FullTmpfs() { ::umount2(dir_.c_str(), MNT_DETACH); }

  private:
    fs::path dir_;
};

std::string sha256_hex(const std::string& bytes) {
    std::array<unsigned char, SHA256_DIGEST_LENGTH> digest{};
    SHA256(reinterpret_cast<const unsigned char*>(bytes.data()), bytes.size(), digest.data());
    std::string out;
    for (const unsigned char byte : digest) {
        static const char hex[] = "0123456789abcdef";
        out.push_back(hex[byte >> 4]);
        out.push_back(hex[byte & 15]);
    }
    return out;
}

// The Location header of an answer, "" when there is none.
std::string location_of(const HttpAnswer& answer) {
    const std::string name = "\r\nLocation: ";
    const auto at = answer.head.find(name);
    if (at == std::string::npos) return "";
    const auto end = answer.head.find("\r\n", at + name.size());
    return answer.head.substr(at + name.size(), end - at - name.size());
}

// A registry (modules) and a mirror (providers) whose archives the test
// server holds; the cache directory ($XDG_CACHE_HOME) a full tmpfs.
struct FullDiskWorld : CacheWorld {
    const std::string zip;
    const std::string module_bytes = "a module archive, as its registry serves it";
    const std::string provider = registry() + "/acme/thing/";
    const std::string zip_name = "terraform-provider-thing_1.1.0_linux_amd64.zip";
    const std::string module_path = "/files/hello-1.0.0.tar.gz";
    std::optional<FullTmpfs> full;

    // `package`: the provider package the mirror serves, in two parts (the
    // first 8 KiB, then after a second the rest) when `room` is given: the
    // free room left on the cache directory's tmpfs.
    explicit FullDiskWorld(std::uintmax_t room = 0,
                           std::string package_bytes = std::string("PK\x05\x06", 4) +
                                                       std::string(18, '\0'))
        : zip(std::move(package_bytes)) {
        hostkeeper::test::Response download;
        download.status = 204;
        download.header("X-Terraform-Get", url("registry", module_path));
        server.route("registry.localhost", kModule + "/1.0.0/download", download);
        hostkeeper::test::Response archive;
        archive.body = module_bytes;
        archive.header("Content-Type", "application/x-gzip");
        server.route("registry.localhost", module_path, archive);
        server.route("mirror.localhost", "/providers/" + provider + "index.json",
                     json_response(R"({"versions":{"1.1.0":{}}})"));
        server.route("mirror.localhost", "/providers/" + provider + "1.1.0.json",
                     json_response(R"({"archives":{"linux_amd64":{"url":")" + zip_name +
                                   R"(","hashes":["zh:)" + sha256_hex(zip) + R"("]}}})"));
        hostkeeper::test::Response package;
        package.body = zip;
        package.header("Content-Type", "application/zip");
        if (room > 0) {
            package.pause_after = 8192;
            package.pause_midway = std::chrono::seconds(1);
        }
        server.route("mirror.localhost", "/providers/" + provider + zip_name, package);
        full.emplace(xdg / "cache", room);
        start_cache({registry()}, true,
                    "[registry]\nmirror_url = \"" + url("mirror", "/providers/") + "\"\n");
    }

    // The listener's path of the archive the answer at `target` names.
    std::string provider_archive_path() const {
        const HttpAnswer version = get("/mirror/" + provider + "1.1.0.json");
        INFO(version.raw);
        REQUIRE(version.status == 200);
        const std::string archive_url =
            Json::parse(version.body).at("archives").at("linux_amd64").at("url").get<std::string>();
        return archive_url.substr(archive_url.find('/', 7));
    }
    std::string module_archive_path() const {
        const HttpAnswer download =
            get("/v1/" + registry() + "/modules/acme/hello/null/1.0.0/download");
        INFO(download.raw);
        REQUIRE(download.status == 204);
        const std::string name = "\r\nX-Terraform-Get: ";
        const auto at = download.head.find(name);
        REQUIRE(at != std::string::npos);
        const auto end = download.head.find("\r\n", at + name.size());
        const std::string served = download.head.substr(at + name.size(), end - at - name.size());
        REQUIRE(served.rfind("http://" + listen() + "/", 0) == 0);
        return served.substr(served.find('/', 7));
    }
};

}  // namespace

TEST_CASE("registry cache: a full cache directory passes archives through to their upstream",
          "[registry-cache-full-disk]") {
    FullDiskWorld w;
    const std::string provider_upstream = w.url("mirror", "/providers/" + w.provider + w.zip_name);
    const std::string module_upstream = w.url("registry", w.module_path);

    // The provider package: a redirect to where the mirror said it is; the
    // store could not keep it. Terraform checks it against the mirror's hashes.
    const std::string provider_path = w.provider_archive_path();
    const HttpAnswer first = w.get(provider_path);
    INFO(first.raw);
    CHECK(first.status == 302);
    CHECK(location_of(first) == provider_upstream);
    const HttpAnswer again = w.get(provider_path);
    CHECK(again.status == 302);
    CHECK(location_of(again) == provider_upstream);
    // The second was passed through without trying the full directory again.
    CHECK(w.server.count("mirror.localhost", "/providers/" + w.provider + w.zip_name) <= 1);

    // The module archive likewise, to the location its registry gave.
    const std::string module_path = w.module_archive_path();
    const HttpAnswer module = w.get(module_path);
    INFO(module.raw);
    CHECK(module.status == 302);
    CHECK(location_of(module) == module_upstream);
    // What the redirects lead to is upstream's own bytes.
    CHECK(w.server.count("registry.localhost", w.module_path) <= 1);

    // hostkeeper status: the store's state.
    const Json archives = w.cache_status().at("archives");
    INFO(archives.dump());
    CHECK(archives.at("count") == 0);
    CHECK(archives.at("failures") == 0);  // nothing failed upstream
}

TEST_CASE("registry cache: a disk that fills while an archive streams cuts that response short",
          "[registry-cache-full-disk]") {
    // 32 KiB free, a 160 KiB package: its first 8 KiB go out to the client,
    // then writing the rest into the store fails.
    std::string package = "PK";
    while (package.size() < 160 * 1024) package += std::to_string(package.size() * 7919) + "\n";
    FullDiskWorld w(32 * 1024, package);
    const std::string path = w.provider_archive_path();
    const HttpAnswer cut = w.get(path);
    INFO(cut.head);
    REQUIRE(cut.status == 200);
    CHECK_THAT(cut.head, Catch::Contains("Content-Length: " + std::to_string(package.size())));
    // Cut short: some bytes, never all of them, and those the package's own.
    CHECK(cut.body.size() >= 8192);
    CHECK(cut.body.size() < package.size());
    CHECK(package.compare(0, cut.body.size(), cut.body) == 0);

    // The store is full now: the next request is passed through, and
    // nothing of the cut download was kept.
    const HttpAnswer again = w.get(path);
    CHECK(again.status == 302);
    CHECK(location_of(again) == w.url("mirror", "/providers/" + w.provider + w.zip_name));
    const Json archives = w.cache_status().at("archives");
    INFO(archives.dump());
    CHECK(archives.at("count") == 0);
    CHECK_THAT(archives.at("store_problem").get<std::string>(),
               Catch::Contains("the cache directory is full: "));
    // No archive and no temp file: the tmpfs's filler and the store's lock only.
    for (const auto& entry : fs::recursive_directory_iterator(w.xdg / "cache")) {
        const std::string name = entry.path().filename().string();
        if (entry.is_regular_file()) CHECK((name == "filler" || name == ".lock"));
    }
}

TEST_CASE("registry cache: status and doctor say the cache directory is full",
          "[registry-cache-full-disk]") {
    FullDiskWorld w;
    const HttpAnswer first = w.get(w.provider_archive_path());
    REQUIRE(first.status == 302);
    const Json archives = w.cache_status().at("archives");
    INFO(archives.dump());
    CHECK_THAT(archives.at("store_problem").get<std::string>(),
               Catch::Contains("the cache directory is full: ") &&
                   Catch::Contains("archives are passed through uncached"));
    CHECK(archives.at("passed_through") == 1);
    const Result status = w.cli({"status"});
    CHECK_THAT(status.out, Catch::Contains("the cache directory is full"));
    // Doctor reads registry-cache.json where the daemon does.
    RunOptions as_daemon;
    as_daemon.env["XDG_CONFIG_HOME"] = (w.xdg / "config").string();
    as_daemon.env["XDG_STATE_HOME"] = (w.xdg / "state").string();
    as_daemon.env["XDG_CACHE_HOME"] = (w.xdg / "cache").string();
    const Result doctor =
        run({bin("hostkeeper"), "--socket", w.socket().string(), "doctor"}, as_daemon);
    INFO(doctor.out);
    CHECK_THAT(doctor.out, Catch::Contains("the cache directory is full"));
    CHECK_THAT(doctor.out, Catch::Contains("free space there"));
}

TEST_CASE("registry cache: a failure is remembered across a restart while it is fresh",
          "[registry-cache-listener]") {
    CacheWorld w;
    hostkeeper::test::Response hung;
    hung.hang = true;
    const std::string config = "[registry]\ntimeout = \"2s\"\nerror_ttl = \"300s\"\n";
    w.start_cache({w.registry()}, true, config);
    w.server.route("registry.localhost", kModule + "/versions", hung);

    const HttpAnswer first = w.get(w.versions_path(w.registry()));
    INFO(first.raw);
    CHECK(first.status == 502);
    REQUIRE(w.upstream_versions() == 1);

    // A new hostkeeperd: its answer cache is empty, the failure kept on disk.
    w.ask(Json{{"op", "stop"}});
    REQUIRE(wait_until([&] { return !w.alive(); }, 10s));
    w.start_cache({w.registry()}, false, config);
    REQUIRE(wait_until([&] { return w.alive(); }, 15s));
    REQUIRE(wait_until([&] { return w.routed_now(w.registry()); }, 15s));
    const HttpAnswer second = w.get(w.versions_path(w.registry()));
    INFO(second.raw);
    CHECK(second.status == 502);
    CHECK_THAT(second.head, Catch::Contains("Retry-After: "));
    CHECK_THAT(second.head, Catch::Contains("timed out"));
    // The hung registry was not asked again.
    CHECK(w.upstream_versions() == 1);
}

TEST_CASE(
    "registry cache: a daemon that cannot run with its configuration tells Terraform why at once",
    "[registry-cache-listener]") {
    // As hostkeeperd.socket starts it: a typo in config.toml, the registry
    // cache on. Terraform's request must get the reason from this daemon,
    // not wait for a registration that never comes.
    CacheWorld w;
    w.write_config({w.registry()});
    const fs::path config = w.socket().parent_path() / "config.toml";
    std::ofstream(config) << "[credentials]\nttl = \"soon\"\n";
    RunOptions options;
    options.env["XDG_CONFIG_HOME"] = (w.xdg / "config").string();
    Spawned activator = spawn(
        {"/usr/bin/systemd-socket-activate", "-l", w.socket().string(), "-E",
         "DBUS_SESSION_BUS_ADDRESS", "-E", "HOME", "-E", "XDG_RUNTIME_DIR", "-E", "XDG_CONFIG_HOME",
         "-E", "HOSTKEEPER_PORT_SOCKET", bin("hostkeeperd"), "--config", config.string()},
        options);
    REQUIRE(wait_until([&] { return listening(w.socket()); }, 10s));
    // Terraform runs the helper first; it starts the daemon and hears the reason.
    const Result got = helper(w.socket(), {"get", w.registry()});
    CHECK(got.exit_code == 4);
    CHECK_THAT(got.err, Catch::Contains(config.string() + ":2:"));

    const std::string reason =
        "503 hostkeeperd cannot run with its configuration: " + config.string() + ":2:";
    for (int i = 0; i < 2; ++i) {  // each connection, one answer each
        const HttpAnswer answer = w.get(w.versions_path(w.registry()));
        INFO(answer.raw);
        CHECK(answer.status == 503);
        CHECK_THAT(answer.head, Catch::Contains(reason) &&
                                    Catch::Contains("\"credentials.ttl\": \"soon\" is not"));
        CHECK_THAT(answer.body, Catch::Contains("credentials.ttl"));
        CHECK_THAT(answer.head, !Catch::Contains("not running"));
    }
    CHECK(w.upstream_versions() == 0);
    ::kill(activator.pid, SIGTERM);
    activator.wait();
}

TEST_CASE("registry cache: a host under .invalid (doctor's probe item) is never learned",
          "[registry-cache-listener]") {
    CacheWorld w;
    w.serve("auth", json_response(R"({"modules.v1":"/v1/modules/"})"));
    w.start_cache({w.registry()});
    // What hostkeeper doctor does with its probe item, then a host Terraform asks about.
    const std::string probe = "hostkeeper-doctor.invalid";
    REQUIRE(helper(w.socket(), {"store", probe}, R"({"token":"probe"})").exit_code == 0);
    REQUIRE(helper(w.socket(), {"get", probe}).exit_code == 0);
    REQUIRE(helper(w.socket(), {"forget", probe}).exit_code == 0);
    REQUIRE(helper(w.socket(), {"get", w.host("auth")}).exit_code == 0);
    // The host asked after it is learned and routed; the probe never shows.
    const bool learned = wait_until([&] { return w.routed_now(w.host("auth")); }, 15s);
    INFO(w.cache_status().dump());
    CHECK(learned);
    CHECK_THAT(w.cache_status().dump(), !Catch::Contains(probe));
}

}  // namespace test_registry_cache
