// The record of expiry warnings given (WarnedStages): its file read and
// written, bad files, and a TokenStanding that does not warn again of a
// stage a daemon before it warned of.
#include <stdlib.h>
#include <sys/stat.h>

#include <catch2/catch.hpp>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "daemon/credentials/token_standing.hpp"
#include "daemon/credentials/warned_stages.hpp"
#include "proto/error.hpp"

namespace test_warned_stages {

using namespace hostkeeper::daemon::credentials;
using namespace std::chrono_literals;
namespace fs = std::filesystem;

namespace {

struct TempDir {
    TempDir() {
        std::string pattern = (fs::temp_directory_path() / "hk-warned-XXXXXX").string();
        path = ::mkdtemp(pattern.data());
    }
    TempDir(const TempDir&) = delete;
    TempDir& operator=(const TempDir&) = delete;
    ~TempDir() { fs::remove_all(path); }
    fs::path path;
};

const WallTime kAt = WallTime{std::chrono::sys_days{std::chrono::year{2026} / 12 / 1}} + 9h + 30min;

void write(const fs::path& file, const std::string& text) {
    std::ofstream(file) << text;
}

}  // namespace

TEST_CASE("the warnings file reads back what was written", "[daemon][credentials]") {
    const WarnedHosts hosts{{"app.terraform.io", {kAt, ExpiryStage::within_7_days}},
                            {"tfe.example.com", {kAt - 24h * 40, ExpiryStage::expired}}};
    const std::string text = warned_stages_text(hosts);
    CHECK(text ==
          R"({"v":1,"hosts":{"app.terraform.io":{"expires_at":"2026-12-01T09:30:00Z","stage":)"
          R"("within_7_days"},"tfe.example.com":{"expires_at":"2026-10-22T09:30:00Z",)"
          R"("stage":"expired"}}})"
          "\n");
    const WarnedHosts again = parse_warned_stages(text);
    REQUIRE(again.size() == 2);
    CHECK(again.at("app.terraform.io").expires == kAt);
    CHECK(again.at("tfe.example.com").stage == ExpiryStage::expired);
    // An offset is read as the same moment.
    CHECK(parse_warned_stages(R"({"v":1,"hosts":{"h":{"expires_at":"2026-12-01T10:30:00+01:00",)"
                              R"("stage":"within_1_day"}}})")
              .at("h")
              .expires == kAt);
}

TEST_CASE("a bad warnings file is an error naming what is wrong", "[daemon][credentials]") {
    const auto why = [](const std::string& text) {
        try {
            (void)parse_warned_stages(text);
        } catch (const hostkeeper::proto::Error& e) {
            CHECK(e.code() == hostkeeper::proto::ErrorCode::bad_request);
            return std::string(e.what());
        }
        return std::string("parsed");
    };
    CHECK_THAT(why("{"), Catch::StartsWith("the expiry warnings file: "));
    CHECK_THAT(why("[]"), Catch::Contains("not an object with \"v\": 1"));
    CHECK_THAT(why(R"({"v":2,"hosts":{}})"), Catch::Contains("not an object with \"v\": 1"));
    CHECK_THAT(why(R"({"v":1})"), Catch::Contains("no \"hosts\" object"));
    CHECK_THAT(why(R"({"v":1,"hosts":{"h":1}})"), Catch::Contains("\"h\" is not an object"));
    CHECK_THAT(why(R"({"v":1,"hosts":{"h":{"stage":"expired"}}})"),
               Catch::Contains("needs the strings expires_at and stage"));
    CHECK_THAT(why(R"({"v":1,"hosts":{"h":{"expires_at":"tomorrow","stage":"expired"}}})"),
               Catch::Contains("is not RFC 3339"));
    CHECK_THAT(
        why(R"({"v":1,"hosts":{"h":{"expires_at":"2026-12-01T09:30:00Z","stage":"later"}}})"),
        Catch::Contains("the stage of \"h\" is not one of"));
    CHECK_THAT(why(std::string(300 * 1024, ' ')), Catch::Contains("larger than 256 KiB"));
    CHECK_THAT(why(std::string(100, '[') + std::string(100, ']')),
               Catch::StartsWith("the expiry warnings file: "));
}

TEST_CASE("a stage recorded is not warned of again by the next daemon", "[daemon][credentials]") {
    const TempDir dir;
    const fs::path file = dir.path / "expiry-warnings.json";
    WallTime wall = kAt - 24h * 5;
    std::vector<ExpiryAlert> alerts;
    const auto standing_with = [&](WarnedStages& warned) {
        auto standing = std::make_unique<TokenStanding>(
            [] { return std::chrono::steady_clock::now(); }, [&wall] { return wall; });
        standing->remember_warnings(warned);
        standing->on_alert([&alerts](const ExpiryAlert& a) { alerts.push_back(a); });
        return standing;
    };
    {
        WarnedStages warned(file);  // none yet
        auto first = standing_with(warned);
        first->read("h", kAt);
        (void)first->withheld("h");
        REQUIRE(alerts.size() == 1);
        CHECK(alerts[0].stage == ExpiryStage::within_7_days);
    }
    struct stat st {};
    REQUIRE(::stat(file.c_str(), &st) == 0);
    CHECK((st.st_mode & 0777) == 0600);
    {
        WarnedStages warned(file);  // the next daemon
        auto second = standing_with(warned);
        second->read("h", kAt);
        (void)second->withheld("h");
        CHECK(alerts.size() == 1);  // not again
        wall = kAt - 2h;            // but the next stage, yes
        (void)second->withheld("h");
        REQUIRE(alerts.size() == 2);
        CHECK(alerts[1].stage == ExpiryStage::within_1_day);
        // A new token (another expiry) starts over.
        second->stored("h", kAt + 24h * 3);
        (void)second->withheld("h");
        REQUIRE(alerts.size() == 3);
        CHECK(alerts[2].stage == ExpiryStage::within_7_days);
    }
}

TEST_CASE("an unreadable warnings file is logged and starts empty", "[daemon][credentials]") {
    const TempDir dir;
    const fs::path file = dir.path / "expiry-warnings.json";
    write(file, "not json");
    WarnedStages warned(file);
    CHECK(warned.warned("h", kAt) == ExpiryStage::later);
    warned.record("h", kAt, ExpiryStage::within_30_days);
    CHECK(WarnedStages(file).warned("h", kAt) == ExpiryStage::within_30_days);
    CHECK(WarnedStages(file).warned("h", kAt + 1s) == ExpiryStage::later);  // another expiry
}

}  // namespace test_warned_stages
