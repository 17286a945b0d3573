// The read-through cache alone, over an in-memory keyring and a fake clock.
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <catch2/catch.hpp>
#include <chrono>
#include <string>
#include <utility>
#include <vector>

#include "credential_fixture.hpp"
#include "daemon/credentials/credential_cache.hpp"
#include "daemon/credentials/keyring_text.hpp"
#include "proto/error.hpp"

namespace test_credential_cache {

using namespace hostkeeper;
using namespace std::chrono_literals;
namespace asio = boost::asio;

namespace {

struct Fixture : test::CredentialFixture {
    explicit Fixture(daemon::credentials::CredentialCacheOptions options = {})
        : cache(io.get_executor(), pool.get_executor(), keyring, options, clock()) {}
    ~Fixture() {
        cache.stop();
        pool.join();
    }
    std::optional<std::string> get(const std::string& host) { return text(run(cache.read(host))); }

    daemon::credentials::CredentialCache cache;
};

}  // namespace

TEST_CASE("read goes through to the keyring once, then serves the cache", "[daemon][credentials]") {
    Fixture f;
    f.keyring.put("h.example", R"({"token":"t1"})");
    CHECK(f.get("h.example") == R"({"token":"t1"})");
    CHECK(f.get("h.example") == R"({"token":"t1"})");
    CHECK(f.keyring.lookups == 1);
    const auto stats = f.cache.stats();
    CHECK(stats.hits == 1);
    CHECK(stats.misses == 1);
    CHECK(stats.positive == 1);
}

TEST_CASE("sliding TTL, absolute cap, negative TTL", "[daemon][credentials]") {
    daemon::credentials::CredentialCacheOptions options;
    options.ttl = 10s;
    options.max_lifetime = 30s;
    options.negative_ttl = 5s;
    Fixture f(options);
    f.keyring.put("h", R"({"token":"t"})");
    f.get("h");
    f.now += 9s;
    f.get("h");  // renewed
    f.now += 9s;
    f.get("h");
    CHECK(f.keyring.lookups == 1);
    f.now += 13s;  // 31s after load: past the cap although used 9s ago... and idle > 10s
    f.get("h");
    CHECK(f.keyring.lookups == 2);

    CHECK_FALSE(f.get("none").has_value());
    CHECK_FALSE(f.get("none").has_value());
    CHECK(f.keyring.lookups == 3);  // "none" was cached
    f.now += 5s;
    CHECK_FALSE(f.get("none").has_value());
    CHECK(f.keyring.lookups == 4);  // and expired after negative_ttl
}

TEST_CASE("absolute cap alone", "[daemon][credentials]") {
    daemon::credentials::CredentialCacheOptions options;
    options.ttl = 10s;
    options.max_lifetime = 15s;
    Fixture f(options);
    f.keyring.put("h", R"({"token":"t"})");
    for (int i = 0; i < 3; ++i) {
        f.get("h");
        f.now += 5s;
    }
    CHECK(f.keyring.lookups == 1);
    f.get("h");  // 15s after load
    CHECK(f.keyring.lookups == 2);
}

TEST_CASE("a TTL of 0 disables caching", "[daemon][credentials]") {
    daemon::credentials::CredentialCacheOptions options;
    options.ttl = 0s;
    options.negative_ttl = 0s;
    Fixture f(options);
    f.keyring.put("h", R"({"token":"t"})");
    f.get("h");
    f.get("h");
    f.get("none");
    f.get("none");
    CHECK(f.keyring.lookups == 4);
    CHECK(f.cache.stats().entries == 0);
}

TEST_CASE("store and forget write through to the keyring, then the cache",
          "[daemon][credentials]") {
    Fixture f;
    CHECK_FALSE(f.get("h").has_value());  // "none" is cached...
    f.run(f.cache.write("h", proto::Secret(R"({"token":"new"})")));
    CHECK(f.keyring.text("h") == R"({"token":"new"})");
    CHECK(f.get("h") == R"({"token":"new"})");  // ...and replaced by the store
    CHECK(f.keyring.lookups == 1);

    f.run(f.cache.remove("h"));
    CHECK_FALSE(f.keyring.has("h"));
    CHECK_FALSE(f.get("h").has_value());
    CHECK(f.keyring.lookups == 1);
    f.run(f.cache.remove("never-stored"));  // succeeds when there was nothing
}

TEST_CASE("a failed store leaves keyring and cache as they were", "[daemon][credentials]") {
    Fixture f;
    f.keyring.put("h", R"({"token":"old"})");
    CHECK(f.get("h") == R"({"token":"old"})");
    f.keyring.fail_with(proto::ErrorCode::keyring_locked);
    CHECK_THROWS_AS(f.run(f.cache.write("h", proto::Secret(R"({"token":"new"})"))), proto::Error);
    f.keyring.fail_with(std::nullopt);
    CHECK(f.keyring.text("h") == R"({"token":"old"})");
    CHECK(f.get("h") == R"({"token":"old"})");
}

TEST_CASE("keyring errors are reported, never cached as 'none'", "[daemon][credentials]") {
    Fixture f;
    f.keyring.put("h", R"({"token":"t"})");
    f.keyring.fail_with(proto::ErrorCode::keyring_locked);
    try {
        f.get("h");
        FAIL("no error");
    } catch (const proto::Error& e) {
        CHECK(e.code() == proto::ErrorCode::keyring_locked);
    }
    f.keyring.fail_with(std::nullopt);
    CHECK(f.get("h") == R"({"token":"t"})");
}

TEST_CASE("concurrent misses for one host share one keyring lookup", "[daemon][credentials]") {
    Fixture f;
    f.keyring.put("h", R"({"token":"t"})");
    f.keyring.close_gate();
    int answered = 0;
    for (int i = 0; i < 20; ++i) {
        asio::co_spawn(
            f.io,
            [&]() -> asio::awaitable<void> {
                auto secret = co_await f.cache.read("h");
                if (secret && secret->view() == R"({"token":"t"})") ++answered;
            },
            [](const std::exception_ptr& e) {
                if (e) std::rethrow_exception(e);
            });
    }
    // Let all 20 reach the service before the keyring answers.
    f.io.restart();
    f.io.poll();
    f.keyring.open_gate();
    while (answered < 20 && f.keyring.lookups <= 1) {
        f.io.restart();
        f.io.run_for(std::chrono::milliseconds(10));
    }
    CHECK(answered == 20);
    CHECK(f.keyring.lookups == 1);
}

TEST_CASE("the cache holds at most max_entries hosts", "[daemon][credentials]") {
    daemon::credentials::CredentialCacheOptions options;
    options.max_entries = 3;
    Fixture f(options);
    for (int i = 0; i < 10; ++i) f.get("h" + std::to_string(i));
    const auto stats = f.cache.stats();
    CHECK(stats.entries == 3);
    CHECK(stats.evictions == 7);
}

TEST_CASE("keyring text: JSON objects pass, bare tokens are wrapped, junk is refused",
          "[daemon][credentials]") {
    CHECK(daemon::credentials::credentials_from_keyring_text(
              "h", proto::Secret(R"( {"token" : "a", "x":1} )"))
              .view() == R"({"token":"a","x":1})");
    CHECK(daemon::credentials::credentials_from_keyring_text("h", proto::Secret("abc.def-123"))
              .view() == R"({"token":"abc.def-123"})");
    CHECK_THROWS_AS(
        daemon::credentials::credentials_from_keyring_text("h", proto::Secret("two words")),
        proto::Error);
    CHECK_THROWS_AS(
        daemon::credentials::credentials_from_keyring_text("h", proto::Secret(R"({"token":1})")),
        proto::Error);
    CHECK_THROWS_AS(daemon::credentials::credentials_from_keyring_text("h", proto::Secret("")),
                    proto::Error);
}

// The cache follows the keyring: what a watch on it reports.

TEST_CASE("a keyring change drops every cached answer, tokens and 'none' alike",
          "[daemon][credentials][watch]") {
    Fixture f;
    f.keyring.put("a", R"({"token":"a1"})");
    CHECK(f.get("a") == R"({"token":"a1"})");
    CHECK_FALSE(f.get("b").has_value());
    // Edited behind the daemon's back (Seahorse, secret-tool), then announced.
    f.keyring.put("a", R"({"token":"a2"})");
    f.keyring.put("b", R"({"token":"b1"})");
    f.cache.keyring_changed();
    CHECK(f.cache.stats().entries == 0);
    CHECK(f.get("a") == R"({"token":"a2"})");
    CHECK(f.get("b") == R"({"token":"b1"})");
    CHECK(f.keyring.lookups == 4);
    CHECK(f.cache.stats().invalidations == 1);
}

TEST_CASE("a locked keyring announced mid-lookup: the answer read before is not cached",
          "[daemon][credentials][watch]") {
    Fixture f;
    f.keyring.put("h", R"({"token":"t"})");
    f.keyring.close_gate();
    std::optional<std::string> answer;
    asio::co_spawn(
        f.io,
        [&]() -> asio::awaitable<void> {
            auto secret = co_await f.cache.read("h");
            if (secret) answer = std::string(secret->view());
        },
        [](const std::exception_ptr& e) {
            if (e) std::rethrow_exception(e);
        });
    f.io.restart();
    f.io.poll();                // the lookup is on the worker, waiting at the gate
    f.cache.keyring_changed();  // the lock arrives while it reads
    f.keyring.open_gate();
    while (!answer) {
        f.io.restart();
        f.io.run_for(std::chrono::milliseconds(10));
    }
    CHECK(answer == R"({"token":"t"})");  // the request in flight gets what it read
    CHECK(f.cache.stats().entries == 0);  // but it is not kept
    f.keyring.fail_with(proto::ErrorCode::keyring_locked);
    CHECK_THROWS_AS(f.get("h"), proto::Error);  // the next get asks the (now locked) keyring
}

TEST_CASE("a get after a keyring event does not join a lookup started before it",
          "[daemon][credentials][watch]") {
    Fixture f;
    f.keyring.put("h", R"({"token":"t"})");
    f.keyring.close_gate();
    int answers = 0;
    const auto get = [&]() -> asio::awaitable<void> {
        (void)co_await f.cache.read("h");
        ++answers;
    };
    const auto rethrow = [](const std::exception_ptr& e) {
        if (e) std::rethrow_exception(e);
    };
    asio::co_spawn(f.io, get(), rethrow);
    f.io.restart();
    f.io.poll();                // the first lookup waits at the gate
    f.cache.keyring_changed();  // a lock, say
    asio::co_spawn(f.io, get(), rethrow);
    f.io.restart();
    f.io.poll();
    f.keyring.open_gate();
    while (answers < 2) {
        f.io.restart();
        f.io.run_for(std::chrono::milliseconds(10));
    }
    CHECK(f.cache.stats().keyring_lookups == 2);  // the second asked the keyring itself
}

TEST_CASE("while the keyring is not watched, nothing is cached", "[daemon][credentials][watch]") {
    Fixture f;
    f.keyring.put("h", R"({"token":"t"})");
    CHECK(f.get("h") == R"({"token":"t"})");
    f.cache.keyring_watched(false);
    CHECK(f.cache.stats().entries == 0);
    CHECK_FALSE(f.cache.stats().keyring_watched);
    CHECK(f.get("h") == R"({"token":"t"})");
    CHECK(f.get("h") == R"({"token":"t"})");
    CHECK_FALSE(f.get("none.example").has_value());
    f.run(f.cache.write("s", proto::Secret(R"({"token":"s"})")));
    CHECK(f.cache.stats().entries == 0);
    CHECK(f.keyring.lookups == 4);  // one while watched, then every get
    f.cache.keyring_watched(true);
    CHECK(f.get("h") == R"({"token":"t"})");
    CHECK(f.get("h") == R"({"token":"t"})");
    CHECK(f.keyring.lookups == 5);
    // The watch reports again that it stands (as its thread does after start-up): nothing is
    // dropped.
    f.cache.keyring_watched(true);
    CHECK(f.get("h") == R"({"token":"t"})");
    CHECK(f.keyring.lookups == 5);
}

TEST_CASE("a keyring event during a store: the stored token is not kept in the cache",
          "[daemon][credentials][watch]") {
    Fixture f;
    f.keyring.close_gate();
    bool stored = false;
    asio::co_spawn(
        f.io,
        [&]() -> asio::awaitable<void> {
            co_await f.cache.write("h", proto::Secret(R"({"token":"t"})"));
            stored = true;
        },
        [](const std::exception_ptr& e) {
            if (e) std::rethrow_exception(e);
        });
    f.io.restart();
    f.io.poll();                // the write is on the worker, waiting at the gate
    f.cache.keyring_changed();  // say, the keyring is locked meanwhile
    f.keyring.open_gate();
    while (!stored) {
        f.io.restart();
        f.io.run_for(std::chrono::milliseconds(10));
    }
    CHECK(f.keyring.text("h") == R"({"token":"t"})");
    CHECK(f.cache.stats().entries == 0);
    f.keyring.fail_with(proto::ErrorCode::keyring_locked);
    CHECK_THROWS_AS(f.get("h"), proto::Error);  // asks the keyring, serves nothing it kept
}

TEST_CASE("the read check sees each keyring answer; what it throws fails the read",
          "[daemon][credentials][cache]") {
    Fixture f;
    std::vector<std::string> seen;
    f.cache.check_reads(
        [&](const std::string& host, const std::optional<proto::Secret>& read, bool current) {
            seen.push_back(host + (read ? "=" + std::string(read->view()) : " none") +
                           (current ? "" : " (stale)"));
            if (host == "bad") throw proto::Error(proto::ErrorCode::keyring_error, "refused");
        });
    f.keyring.put("h", R"({"token":"t"})");
    f.keyring.put("bad", R"({"token":"b"})");
    CHECK(f.get("h") == R"({"token":"t"})");
    CHECK(f.get("h") == R"({"token":"t"})");  // from the cache: not checked again
    CHECK_FALSE(f.get("none").has_value());
    CHECK_THROWS_AS(f.get("bad"), proto::Error);
    CHECK_THROWS_AS(f.get("bad"), proto::Error);  // not cached: read and checked again
    CHECK(seen == std::vector<std::string>{R"(h={"token":"t"})", "none none",
                                           R"(bad={"token":"b"})", R"(bad={"token":"b"})"});
    CHECK(f.keyring.lookups == 4);
    CHECK(f.cache.stats().entries == 2);
}

}  // namespace test_credential_cache
