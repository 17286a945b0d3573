// The stored expiry reader: RFC 3339 date-times as a credentials object's
// expires_at, and the warning stages 30, 7 and 1 day before.
#include <catch2/catch.hpp>
#include <chrono>

#include "daemon/credentials/token_expiry.hpp"
#include "proto/error.hpp"

namespace test_token_expiry {

using namespace hostkeeper::daemon::credentials;
using namespace std::chrono_literals;
namespace proto = hostkeeper::proto;

namespace {

WallTime utc(int y, unsigned m, unsigned d, int hh, int mm, int ss) {
    return WallTime{
        std::chrono::sys_days{std::chrono::year{y} / std::chrono::month{m} / std::chrono::day{d}} +
        std::chrono::hours{hh} + std::chrono::minutes{mm} + std::chrono::seconds{ss}};
}

}  // namespace

TEST_CASE("expires_at: RFC 3339 with Z or an offset, fractions and a space allowed",
          "[daemon][credentials]") {
    CHECK(parse_rfc3339("2026-12-01T09:30:00Z") == utc(2026, 12, 1, 9, 30, 0));
    CHECK(parse_rfc3339("2026-12-01t09:30:00z") == utc(2026, 12, 1, 9, 30, 0));
    CHECK(parse_rfc3339("2026-12-01 09:30:00Z") == utc(2026, 12, 1, 9, 30, 0));
    CHECK(parse_rfc3339("2026-12-01T10:30:00+01:00") == utc(2026, 12, 1, 9, 30, 0));
    CHECK(parse_rfc3339("2026-11-30T23:30:00-10:00") == utc(2026, 12, 1, 9, 30, 0));
    CHECK(parse_rfc3339("2024-02-29T00:00:00Z") == utc(2024, 2, 29, 0, 0, 0));
    CHECK(parse_rfc3339("2026-12-01T09:30:00.250Z") == utc(2026, 12, 1, 9, 30, 0) + 250ms);
    CHECK(rfc3339_text(utc(2026, 12, 1, 9, 30, 0) + 250ms) == "2026-12-01T09:30:00Z");
}

TEST_CASE("expires_at: anything else is not an expiry", "[daemon][credentials]") {
    for (const char* bad :
         {"",
          "tomorrow",
          "2026-12-01",
          "2026-12-01T09:30:00",
          "2026-12-01T09:30Z",
          "2026-13-01T09:30:00Z",
          "2026-02-30T09:30:00Z",
          "2025-02-29T00:00:00Z",
          "2026-12-01T24:00:00Z",
          " 2026-12-01T09:30:00Z",
          "2026-12-01T09:30:00Z ",
          "1764581400",
          "2026-12-01T-01T09:30:00",
          "2026-12-01T09:30:60Z",
          "2026-12-01T09:30:00.1234567890Z",
          "2026-12-01T09:30:00+24:00",
          "4024-02-29T23:59:59-12:00",
          "1969-12-31T23:59:59Z",
          "2026-12-01T09:30:00Z\nx = 1",
          "t = 2026-12-01T09:30:00Z",
          "2026-12-01T09:30:00+1:00",
          "2026-12-01T09:30:00.00000000000000000000000000000000000000000000000000Z"}) {
        CAPTURE(bad);
        CHECK_FALSE(parse_rfc3339(bad).has_value());
    }
}

TEST_CASE("expiry_of reads a credentials object's expires_at, or says why not",
          "[daemon][credentials]") {
    const proto::Json none = {{"token", "t"}};
    CHECK_FALSE(expiry_of(none, proto::ErrorCode::bad_request, "x").has_value());
    const proto::Json good = {{"token", "t"}, {"expires_at", "2026-12-01T09:30:00Z"}};
    CHECK(expiry_of(good, proto::ErrorCode::bad_request, "x") == utc(2026, 12, 1, 9, 30, 0));
    CHECK(expiry_of(proto::Secret(good.dump()), proto::ErrorCode::bad_request, "x") ==
          utc(2026, 12, 1, 9, 30, 0));
    for (const proto::Json& value : {proto::Json("soon"), proto::Json(1764581400), proto::Json()}) {
        const proto::Json bad = {{"token", "t"}, {"expires_at", value}};
        try {
            (void)expiry_of(bad, proto::ErrorCode::keyring_error, "the item for h");
            FAIL("accepted " << value.dump());
        } catch (const proto::Error& e) {
            CHECK(e.code() == proto::ErrorCode::keyring_error);
            CHECK_THAT(e.what(), Catch::StartsWith("the item for h: \"expires_at\" must be an "
                                                   "RFC 3339 date-time") &&
                                     Catch::Contains(value.dump()));
        }
    }
}

TEST_CASE("expiry stages: 30, 7 and 1 day before, then expired", "[daemon][credentials]") {
    const WallTime at = utc(2026, 12, 1, 0, 0, 0);
    const auto days = [](int n) { return std::chrono::hours{24 * n}; };
    CHECK(expiry_stage(at, at - days(30) - 1s) == ExpiryStage::later);
    CHECK(expiry_stage(at, at - days(30)) == ExpiryStage::within_30_days);
    CHECK(expiry_stage(at, at - days(7) - 1s) == ExpiryStage::within_30_days);
    CHECK(expiry_stage(at, at - days(7)) == ExpiryStage::within_7_days);
    CHECK(expiry_stage(at, at - days(1) - 1s) == ExpiryStage::within_7_days);
    CHECK(expiry_stage(at, at - days(1)) == ExpiryStage::within_1_day);
    CHECK(expiry_stage(at, at - 1s) == ExpiryStage::within_1_day);
    CHECK(expiry_stage(at, at) == ExpiryStage::expired);
    CHECK(to_string(ExpiryStage::within_7_days) == "within_7_days");
}

}  // namespace test_token_expiry
