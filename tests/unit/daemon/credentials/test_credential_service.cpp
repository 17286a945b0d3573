// The credential service over an in-memory keyring and a fake clock.
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/thread_pool.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <catch2/catch.hpp>
#include <chrono>
#include <utility>

#include "daemon/credentials/credential_service.hpp"
#include "memory_keyring.hpp"
#include "proto/error.hpp"

namespace test_credential_service {

using namespace hostkeeper;
using namespace std::chrono_literals;
namespace asio = boost::asio;
using steady = std::chrono::steady_clock;

namespace {

struct Fixture {
    explicit Fixture(daemon::credentials::CredentialCacheOptions options = {})
        : service(
              io.get_executor(), pool.get_executor(), keyring, options, [this] { return now; },
              [this] { return wall; }) {}
    ~Fixture() {
        service.stop();
        pool.join();
    }

    // Runs one awaitable to completion on the io_context.
    template <typename T>
    T run(asio::awaitable<T> task) {
        std::optional<T> result;
        std::exception_ptr failure;
        asio::co_spawn(io, std::move(task), [&](const std::exception_ptr& e, T value) {
            failure = e;
            if (!e) result = std::move(value);
            io.stop();  // the purge timer would keep run() going
        });
        io.restart();
        io.run();
        if (failure) std::rethrow_exception(failure);
        return std::move(*result);
    }
    void run(asio::awaitable<void> task) {
        std::exception_ptr failure;
        asio::co_spawn(io, std::move(task), [&](const std::exception_ptr& e) {
            failure = e;
            io.stop();
        });
        io.restart();
        io.run();
        if (failure) std::rethrow_exception(failure);
    }
    std::optional<std::string> get(const std::string& host) {
        auto secret = run(service.get(host));
        if (!secret) return std::nullopt;
        return std::string(secret->view());
    }

    steady::time_point now = steady::time_point{} + 1000h;
    daemon::credentials::WallTime wall{std::chrono::sys_days{std::chrono::year{2026} / 11 / 1}};
    asio::io_context io;
    asio::thread_pool pool{1};
    test::MemoryKeyring keyring;
    daemon::credentials::CredentialService service;
};

}  // namespace

TEST_CASE("get reads through to the keyring once, then serves the cache", "[daemon][credentials]") {
    Fixture f;
    f.keyring.put("h.example", R"({"token":"t1"})");
    CHECK(f.get("h.example") == R"({"token":"t1"})");
    CHECK(f.get("h.example") == R"({"token":"t1"})");
    CHECK(f.keyring.lookups == 1);
    const auto stats = f.service.stats();
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
    CHECK(f.service.stats().entries == 0);
}

TEST_CASE("store and forget write through to the keyring, then the cache",
          "[daemon][credentials]") {
    Fixture f;
    CHECK_FALSE(f.get("h").has_value());  // "none" is cached...
    f.run(f.service.store("h", proto::Secret(R"({"token":"new"})")));
    CHECK(f.keyring.text("h") == R"({"token":"new"})");
    CHECK(f.get("h") == R"({"token":"new"})");  // ...and replaced by the store
    CHECK(f.keyring.lookups == 1);

    f.run(f.service.forget("h"));
    CHECK_FALSE(f.keyring.has("h"));
    CHECK_FALSE(f.get("h").has_value());
    CHECK(f.keyring.lookups == 1);
    f.run(f.service.forget("never-stored"));  // succeeds when there was nothing
}

TEST_CASE("a failed store leaves keyring and cache as they were", "[daemon][credentials]") {
    Fixture f;
    f.keyring.put("h", R"({"token":"old"})");
    CHECK(f.get("h") == R"({"token":"old"})");
    f.keyring.fail_with(proto::ErrorCode::keyring_locked);
    CHECK_THROWS_AS(f.run(f.service.store("h", proto::Secret(R"({"token":"new"})"))), proto::Error);
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
                auto secret = co_await f.service.get("h");
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

TEST_CASE("flush drops entries; the next get reads the keyring", "[daemon][credentials]") {
    Fixture f;
    f.keyring.put("a", R"({"token":"1"})");
    f.keyring.put("b", R"({"token":"2"})");
    f.get("a");
    f.get("b");
    CHECK(f.service.flush("a") == 1);
    CHECK(f.service.flush("a") == 0);
    f.get("a");
    CHECK(f.keyring.lookups == 3);
    CHECK(f.service.flush() == 2);
    f.get("b");
    CHECK(f.keyring.lookups == 4);
}

TEST_CASE("the cache holds at most max_entries hosts", "[daemon][credentials]") {
    daemon::credentials::CredentialCacheOptions options;
    options.max_entries = 3;
    Fixture f(options);
    for (int i = 0; i < 10; ++i) f.get("h" + std::to_string(i));
    const auto stats = f.service.stats();
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
    f.service.keyring_changed();
    CHECK(f.service.stats().entries == 0);
    CHECK(f.get("a") == R"({"token":"a2"})");
    CHECK(f.get("b") == R"({"token":"b1"})");
    CHECK(f.keyring.lookups == 4);
    CHECK(f.service.stats().invalidations == 1);
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
            auto secret = co_await f.service.get("h");
            if (secret) answer = std::string(secret->view());
        },
        [](const std::exception_ptr& e) {
            if (e) std::rethrow_exception(e);
        });
    f.io.restart();
    f.io.poll();                  // the lookup is on the worker, waiting at the gate
    f.service.keyring_changed();  // the lock arrives while it reads
    f.keyring.open_gate();
    while (!answer) {
        f.io.restart();
        f.io.run_for(std::chrono::milliseconds(10));
    }
    CHECK(answer == R"({"token":"t"})");    // the request in flight gets what it read
    CHECK(f.service.stats().entries == 0);  // but it is not kept
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
        (void)co_await f.service.get("h");
        ++answers;
    };
    const auto rethrow = [](const std::exception_ptr& e) {
        if (e) std::rethrow_exception(e);
    };
    asio::co_spawn(f.io, get(), rethrow);
    f.io.restart();
    f.io.poll();                  // the first lookup waits at the gate
    f.service.keyring_changed();  // a lock, say
    asio::co_spawn(f.io, get(), rethrow);
    f.io.restart();
    f.io.poll();
    f.keyring.open_gate();
    while (answers < 2) {
        f.io.restart();
        f.io.run_for(std::chrono::milliseconds(10));
    }
    CHECK(f.service.stats().keyring_lookups == 2);  // the second asked the keyring itself
}

TEST_CASE("while the keyring is not watched, nothing is cached", "[daemon][credentials][watch]") {
    Fixture f;
    f.keyring.put("h", R"({"token":"t"})");
    CHECK(f.get("h") == R"({"token":"t"})");
    f.service.keyring_watched(false);
    CHECK(f.service.stats().entries == 0);
    CHECK_FALSE(f.service.stats().keyring_watched);
    CHECK(f.get("h") == R"({"token":"t"})");
    CHECK(f.get("h") == R"({"token":"t"})");
    CHECK_FALSE(f.get("none.example").has_value());
    f.run(f.service.store("s", proto::Secret(R"({"token":"s"})")));
    CHECK(f.service.stats().entries == 0);
    CHECK(f.keyring.lookups == 4);  // one while watched, then every get
    f.service.keyring_watched(true);
    CHECK(f.get("h") == R"({"token":"t"})");
    CHECK(f.get("h") == R"({"token":"t"})");
    CHECK(f.keyring.lookups == 5);
    // The watch reports again that it stands (as its thread does after start-up): nothing is
    // dropped.
    f.service.keyring_watched(true);
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
            co_await f.service.store("h", proto::Secret(R"({"token":"t"})"));
            stored = true;
        },
        [](const std::exception_ptr& e) {
            if (e) std::rethrow_exception(e);
        });
    f.io.restart();
    f.io.poll();                  // the write is on the worker, waiting at the gate
    f.service.keyring_changed();  // say, the keyring is locked meanwhile
    f.keyring.open_gate();
    while (!stored) {
        f.io.restart();
        f.io.run_for(std::chrono::milliseconds(10));
    }
    CHECK(f.keyring.text("h") == R"({"token":"t"})");
    CHECK(f.service.stats().entries == 0);
    f.keyring.fail_with(proto::ErrorCode::keyring_locked);
    CHECK_THROWS_AS(f.get("h"), proto::Error);  // asks the keyring, serves nothing it kept
}

TEST_CASE("serve withholds a refused token until stored, and an expired one",
          "[daemon][credentials]") {
    Fixture f;
    f.keyring.put("h", R"({"token":"t","expires_at":"2026-11-01T02:00:00Z"})");
    std::optional<daemon::credentials::Withheld> why;
    CHECK(f.run(f.service.serve("h", &why)).has_value());
    CHECK(f.service.expiry("h").has_value());
    f.service.token_rejected("h", "https://h/x", 401);
    CHECK_FALSE(f.run(f.service.serve("h", &why)).has_value());
    REQUIRE(why.has_value());
    CHECK(why->reason == daemon::credentials::Withheld::Reason::refused);
    CHECK(f.get("h").has_value());  // get still reads it (check sends it)

    f.run(f.service.store("h", proto::Secret(R"({"token":"t2"})")));
    why.reset();
    CHECK(f.run(f.service.serve("h", &why)).has_value());
    CHECK_FALSE(why.has_value());
    CHECK_FALSE(f.service.expiry("h").has_value());

    f.run(f.service.store(
        "h", proto::Secret(R"({"token":"t3","expires_at":"2026-11-01T01:00:00+00:00"})")));
    f.wall += 1h;
    CHECK_FALSE(f.run(f.service.serve("h", &why)).has_value());
    REQUIRE(why.has_value());
    CHECK(why->reason == daemon::credentials::Withheld::Reason::expired);
    const auto stats = f.service.stats();
    REQUIRE(stats.expiries.count("h") == 1);
    CHECK(stats.wall_now == f.wall);
}

TEST_CASE("an expires_at that is not RFC 3339: store refuses it, a keyring item fails to read",
          "[daemon][credentials]") {
    Fixture f;
    try {
        f.run(f.service.store("h", proto::Secret(R"({"token":"t","expires_at":"soon"})")));
        FAIL("stored");
    } catch (const proto::Error& e) {
        CHECK(e.code() == proto::ErrorCode::bad_request);
        CHECK_THAT(e.what(), Catch::Contains("nothing was stored"));
    }
    CHECK(f.keyring.stores == 0);
    f.keyring.put("k", R"({"token":"t","expires_at":"soon"})");
    try {
        (void)f.get("k");
        FAIL("served");
    } catch (const proto::Error& e) {
        CHECK(e.code() == proto::ErrorCode::keyring_error);
        CHECK_THAT(e.what(), Catch::Contains("the keyring item for k"));
    }
}

namespace {

// Refreshes a login to "new-token" (expiring in 10 minutes), or fails with `failure`.
struct FakeRefresher final : daemon::credentials::TokenRefresher {
    explicit FakeRefresher(Fixture& f) : fixture(f) {}
    asio::awaitable<proto::Secret> refresh(std::string host,
                                           daemon::credentials::LoginRecord record) override {
        ++calls;
        used = std::string(record.refresh_token.view()) + "@" + host;
        if (!failure.empty()) throw proto::Error(proto::ErrorCode::login_failed, failure);
        const daemon::credentials::LoginRecord next{proto::Secret("rt-2"), record.token_url,
                                                    record.client_id, fixture.wall};
        co_return daemon::credentials::login_credentials(proto::Secret("new-token"),
                                                         fixture.wall + 10min, &next);
    }
    Fixture& fixture;
    int calls = 0;
    std::string used;
    std::string failure;
};

// A login stored at f.wall: "old-token" for 10 minutes, refresh token rt-1.
void store_login(Fixture& f) {
    const daemon::credentials::LoginRecord record{proto::Secret("rt-1"),
                                                  "https://h.example/oauth/token", "cli", f.wall};
    const proto::Secret stored =
        daemon::credentials::login_credentials(proto::Secret("old-token"), f.wall + 10min, &record);
    f.keyring.put("h.example", std::string(stored.view()));
}

}  // namespace

TEST_CASE("an expired login is refreshed before it is served, without its refresh token",
          "[daemon][credentials][login]") {
    Fixture f;
    FakeRefresher refresher(f);
    f.service.use_token_refresher(refresher);
    store_login(f);
    CHECK_THAT(*f.get("h.example"), Catch::Contains("old-token"));
    CHECK(refresher.calls == 0);

    f.wall += 11min;
    std::optional<daemon::credentials::Withheld> why;
    const auto served = f.run(f.service.serve("h.example", &why));
    REQUIRE(served);
    CHECK_FALSE(why);
    CHECK(refresher.calls == 1);
    CHECK(refresher.used == "rt-1@h.example");
    CHECK_THAT(std::string(served->view()), Catch::Contains("new-token"));
    CHECK(std::string(served->view()).find("rt-2") == std::string::npos);
    CHECK_THAT(f.keyring.text("h.example"), Catch::Contains("rt-2"));
}

TEST_CASE("a login due for a refresh is served while the refresh runs in the background",
          "[daemon][credentials][login]") {
    Fixture f;
    FakeRefresher refresher(f);
    f.service.use_token_refresher(refresher);
    store_login(f);
    f.wall += 9min + 30s;  // within the last tenth of its 10 minutes
    CHECK_THAT(*f.get("h.example"), Catch::Contains("old-token"));
    (void)f.get("h.example");
    CHECK(refresher.calls == 1);
}

TEST_CASE("a failed refresh withholds the expired token and says to log in again",
          "[daemon][credentials][login]") {
    Fixture f;
    FakeRefresher refresher(f);
    refresher.failure = "refreshing the token of h.example failed: invalid_grant: revoked";
    f.service.use_token_refresher(refresher);
    store_login(f);
    f.wall += 11min;
    std::optional<daemon::credentials::Withheld> why;
    CHECK_FALSE(f.run(f.service.serve("h.example", &why)));
    REQUIRE(why);
    CHECK_THAT(why->message, Catch::Contains("invalid_grant: revoked") &&
                                 Catch::Contains("run hostkeeper login h.example"));
    CHECK(f.service.stats().refresh_failures.count("h.example") == 1);
    // Not tried again at once; a forced refresh is, and says why it failed.
    (void)f.run(f.service.serve("h.example", nullptr));
    CHECK(refresher.calls == 1);
    CHECK_THROWS_WITH(f.run(f.service.refresh("h.example")), Catch::Contains("invalid_grant"));
    CHECK(refresher.calls == 2);
}

}  // namespace test_credential_service
