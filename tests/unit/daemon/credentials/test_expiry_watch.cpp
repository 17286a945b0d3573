// The expiry watch's look at every stored host (ExpiryWatch::look) over an
// in-memory keyring: each host with a stored expiry in a warning stage is
// alerted once, whoever looks first; a locked keyring is skipped quietly.
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/thread_pool.hpp>
#include <catch2/catch.hpp>
#include <chrono>
#include <exception>
#include <string>
#include <vector>

#include "daemon/credentials/credential_service.hpp"
#include "daemon/credentials/expiry_watch.hpp"
#include "daemon/credentials/keyring_items.hpp"
#include "memory_keyring.hpp"
#include "proto/error.hpp"
#include "run_awaitable.hpp"

namespace test_expiry_watch {

using namespace hostkeeper;
using namespace hostkeeper::daemon::credentials;
using namespace std::chrono_literals;
namespace asio = boost::asio;

namespace {

const WallTime kNow{std::chrono::sys_days{std::chrono::year{2026} / 11 / 1}};

struct Fixture {
    Fixture() {
        service.tokens().on_expiry_alert(
            [this](const ExpiryAlert& alert) { alerts.push_back(alert); });
    }
    ~Fixture() {
        service.stop();
        pool.join();
    }
    void run(asio::awaitable<void> task) { test::run_to_completion(io, std::move(task)); }
    void look() { run(watch.look()); }
    void run_learning() { run(watch.look(true)); }

    asio::io_context io;
    asio::thread_pool pool{1};
    test::MemoryKeyring keyring;
    CredentialService service{io.get_executor(),
                              pool.get_executor(),
                              keyring,
                              CredentialCacheOptions{},
                              std::chrono::steady_clock::now,
                              [] { return kNow; }};
    KeyringItems items{pool.get_executor(), keyring, service};
    ExpiryWatch watch{io.get_executor(), items, service.tokens()};
    std::vector<ExpiryAlert> alerts;
    std::vector<std::string> learned;
};

}  // namespace

TEST_CASE("the expiry watch alerts each stored host in a warning stage once",
          "[daemon][credentials]") {
    Fixture f;
    f.keyring.put("soon.example", R"({"token":"t1","expires_at":"2026-11-06T00:00:00Z"})");
    f.keyring.put("later.example", R"({"token":"t2","expires_at":"2027-06-01T00:00:00Z"})");
    f.keyring.put("none.example", R"({"token":"t3"})");
    f.keyring.put("gone.example", R"({"token":"t4","expires_at":"2026-10-01T00:00:00Z"})");
    f.look();
    REQUIRE(f.alerts.size() == 2);
    CHECK(f.alerts[0].host == "gone.example");
    CHECK(f.alerts[0].stage == ExpiryStage::expired);
    CHECK(f.alerts[1].host == "soon.example");
    CHECK(f.alerts[1].stage == ExpiryStage::within_7_days);
    CHECK(f.service.tokens().expiry("later.example").has_value());
    // The next look, and a read, find the same stages: no alert again.
    f.look();
    (void)f.service.tokens().withheld("soon.example");
    CHECK(f.alerts.size() == 2);
}

TEST_CASE("the expiry watch skips a locked keyring quietly and looks again next time",
          "[daemon][credentials]") {
    Fixture f;
    f.keyring.put("soon.example", R"({"token":"t1","expires_at":"2026-11-06T00:00:00Z"})");
    f.keyring.fail_lookups_with(proto::ErrorCode::keyring_locked);
    CHECK_NOTHROW(f.look());
    CHECK(f.alerts.empty());
    f.keyring.fail_lookups_with(std::nullopt);
    f.look();
    REQUIRE(f.alerts.size() == 1);
    CHECK(f.alerts[0].host == "soon.example");
}

namespace {

// A `learn` that records each host and learns an expiry for it.
asio::awaitable<void> learn_for(Fixture& f, std::string host) {
    f.learned.push_back(host);
    f.service.tokens().expiry_learned(host, kNow + std::chrono::hours(24 * 3));
    co_return;
}

}  // namespace

TEST_CASE("the expiry watch asks to learn an unknown expiry on its hourly looks, once a day",
          "[daemon][credentials]") {
    Fixture f;
    f.keyring.put("dated.example", R"({"token":"t1","expires_at":"2027-06-01T00:00:00Z"})");
    f.keyring.put("plain.example", R"({"token":"t2"})");
    f.keyring.put("other.example", R"({"token":"t3"})");
    f.watch.learn_with([&f](std::string host) { return learn_for(f, std::move(host)); });
    f.look();  // the first look at start: nothing is learned
    CHECK(f.learned.empty());
    f.run_learning();
    CHECK(f.learned == std::vector<std::string>{"other.example", "plain.example"});
    // Learned: warned of as a stored expiry, and kept past a new read.
    REQUIRE(f.alerts.size() == 2);
    CHECK(f.alerts[0].stage == ExpiryStage::within_7_days);
    CHECK(f.service.flush() > 0);
    f.run_learning();
    CHECK(f.learned.size() == 2);
    CHECK(f.service.tokens().expiry("plain.example") == kNow + std::chrono::hours(24 * 3));
}

}  // namespace test_expiry_watch
