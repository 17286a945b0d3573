// The token life cycle alone, over a stand-in credential store and fake clocks.
#include <boost/asio/use_awaitable.hpp>
#include <catch2/catch.hpp>
#include <chrono>
#include <map>
#include <string>
#include <utility>

#include "credential_fixture.hpp"
#include "daemon/credentials/token_lifecycle.hpp"
#include "proto/error.hpp"

namespace test_token_lifecycle {

using namespace hostkeeper;
using namespace std::chrono_literals;
namespace asio = boost::asio;

namespace {

// A credential store in memory that tells the life cycle of each read, as
// the cache does of each keyring read; `failure` makes every call throw it.
struct StandInStore final : daemon::credentials::CredentialStore {
    asio::awaitable<std::optional<proto::Secret>> read(std::string host) override {
        ++reads;
        if (failure) throw proto::Error(*failure, "the stand-in store fails");
        std::optional<proto::Secret> found;
        if (const auto item = items.find(host); item != items.end())
            found = proto::Secret(item->second);
        if (lifecycle != nullptr) lifecycle->keyring_read(host, found, true);
        co_return found;
    }
    asio::awaitable<void> write(std::string host, proto::Secret credentials) override {
        if (failure) throw proto::Error(*failure, "the stand-in store fails");
        items[host] = std::string(credentials.view());
        co_return;
    }
    asio::awaitable<void> remove(std::string host) override {
        items.erase(host);
        co_return;
    }
    void put(const std::string& host, const std::string& text) { items[host] = text; }
    std::string text(const std::string& host) const { return items.at(host); }

    std::map<std::string, std::string> items;
    int reads = 0;
    std::optional<proto::ErrorCode> failure;
    daemon::credentials::TokenLifecycle* lifecycle = nullptr;
};

struct Fixture : test::CredentialFixture {
    Fixture() : lifecycle(io.get_executor(), store, clock(), wall_clock()) {
        store.lifecycle = &lifecycle;
    }
    std::optional<std::string> get(const std::string& host) {
        return text(run(lifecycle.get(host)));
    }

    StandInStore store;
    daemon::credentials::TokenLifecycle lifecycle;
};

}  // namespace

TEST_CASE("the life cycle alone: refusals, stores and forgets over a stand-in store",
          "[daemon][credentials][lifecycle]") {
    Fixture f;
    f.store.put("h", R"({"token":"t"})");
    f.lifecycle.token_rejected("h", "https://h/v1", 401);
    std::optional<daemon::credentials::Withheld> why;
    CHECK_FALSE(f.run(f.lifecycle.serve("h", &why)).has_value());
    REQUIRE(why.has_value());
    CHECK_THAT(why->message, Catch::Contains("HTTP 401 from https://h/v1"));
    CHECK(f.lifecycle.stats().rejected.count("h") == 1);
    CHECK(f.lifecycle.flush("h") == 1);  // the refusal
    CHECK(f.run(f.lifecycle.serve("h", nullptr)).has_value());

    f.lifecycle.token_rejected("h", "https://h/v1", 401);
    f.run(f.lifecycle.store(
        "h", proto::Secret(R"({"token":"t2","expires_at":"2026-11-02T00:00:00Z"})")));
    CHECK(f.store.text("h") == R"({"token":"t2","expires_at":"2026-11-02T00:00:00Z"})");
    CHECK_FALSE(f.lifecycle.withheld("h").has_value());  // a new token ends the refusal
    CHECK(f.lifecycle.expiry("h").has_value());
    f.run(f.lifecycle.forget("h"));
    CHECK(f.store.items.empty());
    CHECK_FALSE(f.lifecycle.expiry("h").has_value());
    CHECK_FALSE(f.get("h").has_value());
}

TEST_CASE("the bearer check: the current token, another one, none, or the store cannot say",
          "[daemon][credentials][lifecycle]") {
    using Match = daemon::credentials::BearerAnswer::Match;
    Fixture f;
    const auto check = [&f](const std::string& host, const std::string& authorization) {
        return f.run(f.lifecycle.check_bearer(host, authorization, "a test request for " + host));
    };
    CHECK(check("h", "Bearer t").match == Match::no_token);  // nothing stored: any is let through
    f.store.put("h", R"({"token":"t","login":{"refresh_token":"r"}})");
    CHECK(check("h", "Bearer t").match == Match::current);
    CHECK(check("h", "Bearer t2").match == Match::other);
    CHECK(check("h", "Bearer ").match == Match::other);
    CHECK(check("h", "").match == Match::other);
    CHECK(check("h", "t").match == Match::other);
    f.lifecycle.token_rejected("h", "https://h/v1", 401);  // withheld: none is handed out
    CHECK(check("h", "Bearer t").match == Match::no_token);
    f.store.failure = proto::ErrorCode::keyring_locked;
    const daemon::credentials::BearerAnswer locked = check("h", "Bearer t");
    CHECK(locked.match == Match::no_token);
    CHECK_THAT(locked.problem, Catch::Contains("the stand-in store fails"));
}

TEST_CASE("serve withholds a refused token until stored, and an expired one",
          "[daemon][credentials]") {
    Fixture f;
    f.store.put("h", R"({"token":"t","expires_at":"2026-11-01T02:00:00Z"})");
    std::optional<daemon::credentials::Withheld> why;
    CHECK(f.run(f.lifecycle.serve("h", &why)).has_value());
    CHECK(f.lifecycle.expiry("h").has_value());
    f.lifecycle.token_rejected("h", "https://h/x", 401);
    CHECK_FALSE(f.run(f.lifecycle.serve("h", &why)).has_value());
    REQUIRE(why.has_value());
    CHECK(why->reason == daemon::credentials::Withheld::Reason::refused);
    CHECK(f.get("h").has_value());  // get still reads it (check sends it)

    f.run(f.lifecycle.store("h", proto::Secret(R"({"token":"t2"})")));
    why.reset();
    CHECK(f.run(f.lifecycle.serve("h", &why)).has_value());
    CHECK_FALSE(why.has_value());
    CHECK_FALSE(f.lifecycle.expiry("h").has_value());

    f.run(f.lifecycle.store(
        "h", proto::Secret(R"({"token":"t3","expires_at":"2026-11-01T01:00:00+00:00"})")));
    f.wall += 1h;
    CHECK_FALSE(f.run(f.lifecycle.serve("h", &why)).has_value());
    REQUIRE(why.has_value());
    CHECK(why->reason == daemon::credentials::Withheld::Reason::expired);
    const auto stats = f.lifecycle.stats();
    REQUIRE(stats.expiries.count("h") == 1);
    CHECK(stats.wall_now == f.wall);
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
    f.store.put("h.example", std::string(stored.view()));
}

}  // namespace

TEST_CASE("an expired login is refreshed before it is served, without its refresh token",
          "[daemon][credentials][login]") {
    Fixture f;
    FakeRefresher refresher(f);
    f.lifecycle.use_token_refresher(refresher);
    store_login(f);
    CHECK_THAT(*f.get("h.example"), Catch::Contains("old-token"));
    CHECK(refresher.calls == 0);

    f.wall += 11min;
    std::optional<daemon::credentials::Withheld> why;
    const auto served = f.run(f.lifecycle.serve("h.example", &why));
    REQUIRE(served);
    CHECK_FALSE(why);
    CHECK(refresher.calls == 1);
    CHECK(refresher.used == "rt-1@h.example");
    CHECK_THAT(std::string(served->view()), Catch::Contains("new-token"));
    CHECK(std::string(served->view()).find("rt-2") == std::string::npos);
    CHECK_THAT(f.store.text("h.example"), Catch::Contains("rt-2"));
}

TEST_CASE("a login due for a refresh is served while the refresh runs in the background",
          "[daemon][credentials][login]") {
    Fixture f;
    FakeRefresher refresher(f);
    f.lifecycle.use_token_refresher(refresher);
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
    f.lifecycle.use_token_refresher(refresher);
    store_login(f);
    f.wall += 11min;
    std::optional<daemon::credentials::Withheld> why;
    CHECK_FALSE(f.run(f.lifecycle.serve("h.example", &why)));
    REQUIRE(why);
    CHECK_THAT(why->message, Catch::Contains("invalid_grant: revoked") &&
                                 Catch::Contains("run hostkeeper login h.example"));
    CHECK(f.lifecycle.stats().refresh_failures.count("h.example") == 1);
    // Not tried again at once; a forced refresh is, and says why it failed.
    (void)f.run(f.lifecycle.serve("h.example", nullptr));
    CHECK(refresher.calls == 1);
    CHECK_THROWS_WITH(f.run(f.lifecycle.refresh("h.example")), Catch::Contains("invalid_grant"));
    CHECK(refresher.calls == 2);
}

}  // namespace test_token_lifecycle
