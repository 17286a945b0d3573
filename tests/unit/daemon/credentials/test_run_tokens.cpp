#include <catch2/catch.hpp>
#include <string>

#include "daemon/credentials/run_tokens.hpp"

namespace test_run_tokens {

using hostkeeper::daemon::credentials::RunTokens;
using hostkeeper::proto::Secret;

TEST_CASE("unit: a run's tokens serve their host while the run lasts") {
    RunTokens tokens;
    CHECK_FALSE(tokens.token("reg.example.com"));
    tokens.add(1, "reg.example.com", Secret("first"));
    tokens.add(2, "reg.example.com", Secret("second"));
    tokens.add(2, "other.example.com", Secret("other"));
    CHECK(tokens.runs() == 2);
    // The latest run's token is the one sent upstream ...
    REQUIRE(tokens.token("reg.example.com"));
    CHECK(tokens.token("reg.example.com")->view() == "second");
    // ... and any live run's is accepted from Terraform.
    CHECK(tokens.carries("reg.example.com", "Bearer first"));
    CHECK(tokens.carries("reg.example.com", "Bearer second"));
    CHECK_FALSE(tokens.carries("reg.example.com", "Bearer other"));
    CHECK_FALSE(tokens.carries("reg.example.com", ""));
    CHECK_FALSE(tokens.carries("none.example.com", "Bearer first"));

    tokens.drop(2);
    CHECK(tokens.token("reg.example.com")->view() == "first");
    CHECK_FALSE(tokens.holds("other.example.com"));
    CHECK_FALSE(tokens.carries("reg.example.com", "Bearer second"));
    tokens.drop(1);
    CHECK_FALSE(tokens.holds("reg.example.com"));
    CHECK(tokens.runs() == 0);
}

}  // namespace test_run_tokens
