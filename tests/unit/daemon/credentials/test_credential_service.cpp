// The credential service: the token life cycle over the read-through cache,
// over an in-memory keyring and fake clocks. Each part is tested alone in
// test_credential_cache.cpp and test_token_lifecycle.cpp.
#include <boost/asio/use_awaitable.hpp>
#include <catch2/catch.hpp>
#include <chrono>
#include <string>
#include <utility>

#include "credential_fixture.hpp"
#include "daemon/credentials/credential_service.hpp"
#include "proto/error.hpp"

namespace test_credential_service {

using namespace hostkeeper;
using namespace std::chrono_literals;

namespace {

struct Fixture : test::CredentialFixture {
    explicit Fixture(daemon::credentials::CredentialCacheOptions options = {})
        : service(io.get_executor(), pool.get_executor(), keyring, options, clock(), wall_clock()) {
    }
    ~Fixture() {
        service.stop();
        pool.join();
    }
    std::optional<std::string> get(const std::string& host) {
        return text(run(service.tokens().get(host)));
    }

    daemon::credentials::CredentialService service;
};

}  // namespace

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

TEST_CASE("an expires_at that is not RFC 3339: store refuses it, a keyring item fails to read",
          "[daemon][credentials]") {
    Fixture f;
    try {
        f.run(f.service.tokens().store("h", proto::Secret(R"({"token":"t","expires_at":"soon"})")));
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

TEST_CASE("flush counts what the cache and the life cycle drop; the bearer check reads through",
          "[daemon][credentials]") {
    Fixture f;
    f.keyring.put("h", R"({"token":"t"})");
    daemon::credentials::BearerCheck& check = f.service.tokens();
    const std::string authorization = "Bearer t";
    CHECK(f.run(check.check_bearer("h", authorization, "a test")).match ==
          daemon::credentials::BearerAnswer::Match::current);
    CHECK(f.keyring.lookups == 1);
    f.service.tokens().token_rejected("h", "https://h/v1", 401);
    CHECK(f.service.flush("h") == 2);  // the cached token and its refusal
    CHECK(f.run(check.check_bearer("h", authorization, "a test")).match ==
          daemon::credentials::BearerAnswer::Match::current);
    CHECK(f.keyring.lookups == 2);
}

}  // namespace test_credential_service
