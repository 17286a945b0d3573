// Which tokens are handed out (TokenStanding) with injected clocks: a
// refusal until stored, forgotten or accepted; an expiry; and one log line
// per threshold crossed per host.
#include <spdlog/sinks/ostream_sink.h>
#include <spdlog/spdlog.h>

#include <catch2/catch.hpp>
#include <chrono>
#include <memory>
#include <sstream>
#include <string>
#include <vector>

#include "daemon/credentials/token_standing.hpp"

namespace test_token_standing {

using namespace hostkeeper::daemon::credentials;
using namespace std::chrono_literals;
using steady = std::chrono::steady_clock;

namespace {

// The default logger writes into `text` while this lives.
class LogCapture {
  public:
    LogCapture()
        : previous_(spdlog::default_logger()),
          logger_(std::make_shared<spdlog::logger>(
              "capture", std::make_shared<spdlog::sinks::ostream_sink_st>(text_))) {
        logger_->set_pattern("%v");
        spdlog::set_default_logger(logger_);
    }
    LogCapture(const LogCapture&) = delete;
    LogCapture& operator=(const LogCapture&) = delete;
    ~LogCapture() { spdlog::set_default_logger(previous_); }
    std::string text() const { return text_.str(); }

  private:
    std::ostringstream text_;
    std::shared_ptr<spdlog::logger> previous_;
    std::shared_ptr<spdlog::logger> logger_;
};

std::size_t count_of(const std::string& text, const std::string& what) {
    std::size_t n = 0;
    for (auto at = text.find(what); at != std::string::npos; at = text.find(what, at + 1)) ++n;
    return n;
}

struct Clocks {
    steady::time_point now = steady::time_point{} + 1000h;
    WallTime wall = WallTime{std::chrono::sys_days{std::chrono::year{2026} / 11 / 1}};
    TokenStanding standing{[this] { return now; }, [this] { return wall; }};
};

}  // namespace

TEST_CASE("a refused token is withheld until stored, forgotten or accepted",
          "[daemon][credentials]") {
    Clocks c;
    CHECK_FALSE(c.standing.withheld("h").has_value());
    c.standing.rejected("h", "https://h/.well-known/terraform.json", 401);
    auto why = c.standing.withheld("h");
    REQUIRE(why.has_value());
    CHECK(why->reason == Withheld::Reason::refused);
    CHECK_THAT(why->message,
               Catch::Contains("HTTP 401 from https://h/.well-known/terraform.json at "
                               "2026-11-01T00:00:00Z") &&
                   Catch::Contains("terraform login h") && Catch::Contains("hostkeeper check h"));
    CHECK_FALSE(c.standing.withheld("other").has_value());
    c.standing.read("h", std::nullopt);  // read again from the keyring: still refused
    CHECK(c.standing.withheld("h").has_value());
    c.standing.stored("h", std::nullopt);
    CHECK_FALSE(c.standing.withheld("h").has_value());

    c.standing.rejected("h", "u", 401);
    c.standing.forgotten("h");
    CHECK_FALSE(c.standing.withheld("h").has_value());
    c.standing.rejected("h", "u", 401);
    c.standing.accepted("h");
    CHECK_FALSE(c.standing.withheld("h").has_value());
    CHECK(c.standing.rejections().empty());
}

TEST_CASE("a token past its expires_at is withheld, whatever else is known",
          "[daemon][credentials]") {
    Clocks c;
    const WallTime at = c.wall + 2h;
    c.standing.stored("h", at);
    CHECK_FALSE(c.standing.withheld("h").has_value());
    CHECK(c.standing.expiry("h") == at);
    c.wall = at;
    auto why = c.standing.withheld("h");
    REQUIRE(why.has_value());
    CHECK(why->reason == Withheld::Reason::expired);
    CHECK_THAT(why->message, Catch::Contains("expired at 2026-11-01T02:00:00Z"));
    c.standing.accepted("h");  // a check cannot make it good again
    CHECK(c.standing.withheld("h")->reason == Withheld::Reason::expired);
    c.standing.stored("h", std::nullopt);
    CHECK_FALSE(c.standing.withheld("h").has_value());
    CHECK_FALSE(c.standing.expiry("h").has_value());
}

TEST_CASE("one log line per threshold crossed per host", "[daemon][credentials]") {
    const LogCapture log;
    Clocks c;
    const WallTime at = c.wall + std::chrono::hours{24 * 40};
    c.standing.read("a", at);
    c.standing.read("b", at);
    const auto ask = [&c] {
        (void)c.standing.withheld("a");
        (void)c.standing.withheld("b");
    };
    ask();
    CHECK(log.text().empty());  // 40 days off
    c.wall = at - std::chrono::hours{24 * 10};
    ask();
    ask();
    CHECK(count_of(log.text(), "the stored token of a expires at") == 1);
    CHECK(count_of(log.text(), "(in 10 days)") == 2);
    c.wall = at - std::chrono::hours{24 * 5};
    ask();
    CHECK(count_of(log.text(), "(in 5 days)") == 2);
    c.wall = at - 2h;
    ask();
    ask();
    CHECK(count_of(log.text(), "(in under a day)") == 2);
    c.wall = at;
    ask();
    ask();
    CHECK(count_of(log.text(), "the stored token of a expired at") == 1);
    CHECK(count_of(log.text(), "the stored token of b expired at") == 1);
    // Read again unchanged: no line again; a new expiry starts over.
    c.standing.read("a", at);
    ask();
    CHECK(count_of(log.text(), "the stored token of a expired at") == 1);
    c.standing.read("a", c.wall + std::chrono::hours{24 * 3});
    ask();
    CHECK(count_of(log.text(), "(in 3 days)") == 1);
}

TEST_CASE("one alert per stage crossed per host, after its log line", "[daemon][credentials]") {
    const LogCapture log;
    Clocks c;
    std::vector<ExpiryAlert> alerts;
    c.standing.on_alert([&alerts, &log](const ExpiryAlert& alert) {
        CHECK_THAT(log.text(), Catch::Contains("the stored token of " + alert.host));
        alerts.push_back(alert);
    });
    const WallTime at = c.wall + std::chrono::hours{24 * 40};
    c.standing.read("a", at);
    (void)c.standing.withheld("a");
    CHECK(alerts.empty());  // 40 days off
    c.wall = at - std::chrono::hours{24 * 20};
    (void)c.standing.withheld("a");
    (void)c.standing.withheld("a");
    c.standing.read("a", at);  // read again unchanged: not alerted again
    (void)c.standing.withheld("a");
    REQUIRE(alerts.size() == 1);
    CHECK(alerts[0].host == "a");
    CHECK(alerts[0].stage == ExpiryStage::within_30_days);
    CHECK(alerts[0].at == at);
    CHECK(alerts[0].now == c.wall);
    // Straight from 20 days to expired: one alert, of the stage reached.
    c.wall = at + 1h;
    (void)c.standing.withheld("a");
    (void)c.standing.withheld("a");
    REQUIRE(alerts.size() == 2);
    CHECK(alerts[1].stage == ExpiryStage::expired);
}

TEST_CASE("a token hostkeeper renews is warned of only when its renewal is overdue",
          "[daemon][credentials]") {
    const LogCapture log;
    Clocks c;
    std::vector<ExpiryAlert> alerts;
    c.standing.on_alert([&alerts](const ExpiryAlert& alert) { alerts.push_back(alert); });
    const auto stages_until_expiry = [&](const std::string& host) {
        const WallTime at = *c.standing.expiry(host);
        for (const auto left : {std::chrono::hours{24 * 20}, std::chrono::hours{24 * 5}, 12h}) {
            c.wall = at - left;
            (void)c.standing.withheld(host);
        }
        c.wall = at + 1min;
        (void)c.standing.withheld(host);
    };

    // Rotated (rotate = true): from the last day on, with terraform login's remedy.
    c.standing.stored("rotated", c.wall + std::chrono::hours{24 * 20}, Renewal::rotation);
    stages_until_expiry("rotated");
    REQUIRE(alerts.size() == 2);
    CHECK(alerts[0].stage == ExpiryStage::within_1_day);
    CHECK(alerts[0].renewal == Renewal::rotation);
    CHECK(alerts[1].stage == ExpiryStage::expired);
    // The day's line only: none at 20 or 5 days left.
    CHECK(count_of(log.text(), "the stored token of rotated expires at") == 1);

    // Refreshed (hostkeeper login): only once it has expired, naming hostkeeper login.
    alerts.clear();
    c.standing.read("login", c.wall + std::chrono::hours{24 * 20}, Renewal::login);
    stages_until_expiry("login");
    REQUIRE(alerts.size() == 1);
    CHECK(alerts[0].stage == ExpiryStage::expired);
    CHECK(alerts[0].renewal == Renewal::login);
    CHECK(count_of(log.text(), "the stored token of login expired at") == 1);
    CHECK_THAT(log.text(), Catch::Contains("run hostkeeper login login"));
    CHECK_FALSE(Catch::contains(log.text(), "the stored token of login expires at"));

    // Stored by a person: every stage.
    alerts.clear();
    c.standing.stored("person", c.wall + std::chrono::hours{24 * 20});
    stages_until_expiry("person");
    CHECK(alerts.size() == 4);
}

TEST_CASE("a warning window never covers most of a token's life; advice names what renews it",
          "[daemon][credentials]") {
    const LogCapture log;
    Clocks c;
    const WallTime start = c.wall;
    // Made by hostkeeper rotate with a 30-day life: not warned of in its first half.
    const WallTime at = start + std::chrono::hours{24 * 30};
    c.standing.stored("made.example", at, Renewal::rotated, start);
    c.wall = start + 3min;
    (void)c.standing.withheld("made.example");
    REQUIRE(c.standing.advice("made.example"));
    CHECK(c.standing.advice("made.example")->stage == ExpiryStage::later);
    CHECK(c.standing.advice("made.example")->renew == "hostkeeper rotate made.example");
    CHECK_FALSE(Catch::contains(log.text(), "the stored token of made.example"));
    c.wall = at - std::chrono::hours{24 * 16};
    CHECK(c.standing.advice("made.example")->stage == ExpiryStage::later);
    c.wall = at - std::chrono::hours{24 * 14};
    (void)c.standing.withheld("made.example");
    CHECK(c.standing.advice("made.example")->stage == ExpiryStage::within_30_days);
    CHECK_THAT(log.text(), Catch::Contains("run hostkeeper rotate made.example before then"));

    // A hostkeeper login token minutes from its expiry is refreshed, not warned of.
    CHECK(warned_stage(at, at - 90s, Renewal::login) == ExpiryStage::later);
    CHECK(warned_stage(at, at + 1s, Renewal::login) == ExpiryStage::expired);
    CHECK(renew_command("l.example", Renewal::login) == "hostkeeper login l.example");
    // Without a known start, a person's token is warned of from 30 days on.
    CHECK(warned_stage(at, at - std::chrono::hours{24 * 29}, Renewal::person) ==
          ExpiryStage::within_30_days);
    CHECK(renew_command("p.example", Renewal::person) == "terraform login p.example");
    // An expired token is withheld with that command.
    c.wall = at + 1s;
    const auto withheld = c.standing.withheld("made.example");
    REQUIRE(withheld);
    CHECK_THAT(withheld->message, Catch::EndsWith("get a new one: hostkeeper rotate made.example"));
}

}  // namespace test_token_standing
