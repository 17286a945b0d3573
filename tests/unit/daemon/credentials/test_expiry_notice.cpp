// What a desktop notification says of a token's expiry (expiry_notice):
// the host and the stage in the summary, what to run in the body.
#include <catch2/catch.hpp>
#include <chrono>

#include "daemon/credentials/expiry_notice.hpp"

namespace test_expiry_notice {

using namespace hostkeeper::daemon::credentials;
using namespace std::chrono_literals;

namespace {

const WallTime kNow{std::chrono::sys_days{std::chrono::year{2026} / 11 / 1}};

}  // namespace

TEST_CASE("an expiry notice names the host, the stage and what to run", "[daemon][credentials]") {
    const ExpiryAlert soon{"app.example.com", ExpiryStage::within_7_days, kNow + 24h * 6 + 2h,
                           kNow};
    const ExpiryNotice notice = expiry_notice(soon);
    CHECK(notice.summary == "The token of app.example.com expires in 6 days");
    CHECK_THAT(notice.body, Catch::Contains("2026-11-07T02:00:00Z") &&
                                Catch::Contains("hostkeeper rotate app.example.com") &&
                                Catch::Contains("terraform login app.example.com"));

    const ExpiryAlert day{"h", ExpiryStage::within_1_day, kNow + 3h, kNow};
    CHECK(expiry_notice(day).summary == "The token of h expires in under a day");
    const ExpiryAlert one{"h", ExpiryStage::within_7_days, kNow + 30h, kNow};
    CHECK(expiry_notice(one).summary == "The token of h expires in 1 day");

    const ExpiryAlert gone{"h", ExpiryStage::expired, kNow - 1h, kNow};
    const ExpiryNotice expired = expiry_notice(gone);
    CHECK(expired.summary == "The token of h has expired");
    CHECK_THAT(expired.body, Catch::Contains("2026-10-31T23:00:00Z") &&
                                 Catch::Contains("no longer handed out") &&
                                 Catch::Contains("terraform login h"));
}

TEST_CASE("an expired login's notice says to log in with hostkeeper again",
          "[daemon][credentials]") {
    const ExpiryAlert gone{"h", ExpiryStage::expired, kNow - 1h, kNow, Renewal::login};
    const ExpiryNotice notice = expiry_notice(gone);
    CHECK(notice.summary == "The token of h has expired");
    CHECK_THAT(notice.body, Catch::Contains("Refreshing it failed: run hostkeeper login h."));
    CHECK_FALSE(Catch::contains(notice.body, "terraform login"));
}

}  // namespace test_expiry_notice
