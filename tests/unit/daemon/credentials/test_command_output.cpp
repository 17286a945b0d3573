// A token command's output read: JSON with expires_at or expires_in, or one
// line holding the bare token; everything else a clear error that never
// quotes the output.
#include <catch2/catch.hpp>
#include <chrono>
#include <string>

#include "daemon/credentials/command_output.hpp"

namespace test_command_output {

using namespace hostkeeper::daemon::credentials;
using namespace std::chrono_literals;
using std::chrono::system_clock;

namespace {

std::string error_of(std::string_view text) {
    try {
        (void)read_command_output(text);
    } catch (const CommandOutputError& e) {
        return e.what();
    }
    return "(accepted)";
}

system_clock::time_point utc(int y, unsigned m, unsigned d, int h, int min, int s) {
    return system_clock::time_point(std::chrono::sys_days(
               std::chrono::year(y) / std::chrono::month(m) / std::chrono::day(d))) +
           std::chrono::hours(h) + std::chrono::minutes(min) + std::chrono::seconds(s);
}

}  // namespace

TEST_CASE("a bare token on one line, with or without its newline", "[daemon][credentials]") {
    for (const char* text : {"tok-123\n", "tok-123", "tok-123\r\n", "\n tok-123\n"}) {
        INFO(text);
        const CommandOutput out = read_command_output(text);
        CHECK(out.token.view() == "tok-123");
        CHECK_FALSE(out.expires_at);
        CHECK_FALSE(out.expires_in);
    }
}

TEST_CASE("JSON with expires_in or expires_at", "[daemon][credentials]") {
    const CommandOutput in = read_command_output(R"({"token":"abc","expires_in":3600})");
    CHECK(in.token.view() == "abc");
    CHECK(in.expires_in == 3600s);
    const CommandOutput at =
        read_command_output(R"({"token":"abc","expires_at":"2026-11-28T10:00:00Z","x":[1]})");
    CHECK(at.expires_at == utc(2026, 11, 28, 10, 0, 0));
    const CommandOutput bare = read_command_output("  {\"token\": \"abc\"}\n");
    CHECK_FALSE(bare.expires_at);
    CHECK_FALSE(bare.expires_in);
}

TEST_CASE("bad output: clear errors that never quote it", "[daemon][credentials]") {
    CHECK(error_of("") == "printed no token");
    CHECK(error_of(" \n\n") == "printed no token");
    CHECK_THAT(error_of("secret-one\nsecret-two\n"), Catch::Contains("more than one line"));
    CHECK_THAT(error_of("secret with spaces\n"), Catch::Contains("not a token"));
    CHECK_THAT(error_of("{\"token\": \"secret\""), Catch::Contains("JSON that cannot be read"));
    CHECK_THAT(error_of("[\"secret\"]"), Catch::Contains("not an object"));
    CHECK_THAT(error_of(R"({"tok":"secret"})"), Catch::Contains("without a string \"token\""));
    CHECK_THAT(error_of(R"({"token":""})"), Catch::Contains("empty"));
    CHECK_THAT(error_of(R"({"token":"se cret"})"), Catch::Contains("spaces"));
    CHECK_THAT(error_of(R"({"token":"secret","expires_in":0})"),
               Catch::Contains("\"expires_in\" that is not a whole number"));
    CHECK_THAT(error_of(R"({"token":"secret","expires_in":"60"})"),
               Catch::Contains("\"expires_in\""));
    CHECK_THAT(error_of(R"({"token":"secret","expires_at":"tomorrow"})"),
               Catch::Contains("not an RFC 3339 date-time"));
    CHECK_THAT(error_of(R"({"token":"secret","expires_at":"2026-11-28T10:00:00Z","expires_in":5})"),
               Catch::Contains("both"));
    std::string deep = "\"secret\"";
    for (int i = 0; i < 20; ++i) deep = "{\"a\":" + deep + "}";
    CHECK_THAT(error_of(deep), Catch::Contains("nested deeper"));
    CHECK_THAT(error_of(std::string(kMaxCommandOutput + 1, 'a')), Catch::Contains("64 KiB"));
    for (const std::string& message :
         {error_of("secret with spaces\n"), error_of(R"({"token":"se cret"})")})
        CHECK(message.find("secret") == std::string::npos);
}

}  // namespace test_command_output
