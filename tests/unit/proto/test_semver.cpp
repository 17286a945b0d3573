// Semantic versions (semver.org 2.0.0) and Terraform's version constraints.
#include <catch2/catch.hpp>
#include <vector>

#include "proto/error.hpp"
#include "proto/semver.hpp"

namespace test_semver {

using Catch::Matchers::Contains;
using hostkeeper::proto::Error;
using hostkeeper::proto::ErrorCode;
using hostkeeper::proto::parse_semver;
using hostkeeper::proto::SemVer;
using hostkeeper::proto::try_parse_semver;
using hostkeeper::proto::VersionConstraints;

namespace {

bool allows(const char* constraints, const char* version) {
    return VersionConstraints::parse(constraints).allows(parse_semver(version));
}

}  // namespace

TEST_CASE("versions parse into their parts", "[proto][semver]") {
    const SemVer v = parse_semver("1.22.333-beta.1+b5.x-y");
    CHECK(v.major == 1);
    CHECK(v.minor == 22);
    CHECK(v.patch == 333);
    CHECK(v.prerelease == "beta.1");
    CHECK(v.build == "b5.x-y");
    CHECK(v.is_prerelease());
    CHECK(v.to_string() == "1.22.333-beta.1+b5.x-y");

    const SemVer release = parse_semver("0.0.0");
    CHECK_FALSE(release.is_prerelease());
    CHECK(release.to_string() == "0.0.0");
}

TEST_CASE("valid versions round-trip, a leading v dropped", "[proto][semver]") {
    const auto [input, canonical] = GENERATE(table<const char*, const char*>({
        {"1.4.0", "1.4.0"},
        {"v1.4.0", "1.4.0"},
        {"10.20.30", "10.20.30"},
        {"1.0.0-alpha", "1.0.0-alpha"},
        {"1.0.0-0.3.7", "1.0.0-0.3.7"},
        {"1.0.0-x.7.z.92", "1.0.0-x.7.z.92"},
        {"1.0.0-x-y-z.--", "1.0.0-x-y-z.--"},
        {"1.0.0-alpha+001", "1.0.0-alpha+001"},
        {"1.0.0+20130313144700", "1.0.0+20130313144700"},
        {"1.0.0-beta+exp.sha.5114f85", "1.0.0-beta+exp.sha.5114f85"},
        {"1.0.0-0A.is.legal", "1.0.0-0A.is.legal"},
        {"18446744073709551615.0.0", "18446744073709551615.0.0"},
    }));
    CAPTURE(input);
    const auto parsed = try_parse_semver(input);
    REQUIRE(parsed);
    CHECK(parsed->to_string() == canonical);
    CHECK(parse_semver(input).to_string() == canonical);
}

TEST_CASE("invalid versions are refused saying what is wrong", "[proto][semver]") {
    const auto [input, reason] = GENERATE(table<const char*, const char*>({
        {"", "it is empty"},
        {"1.2", "it has 2 numeric parts, not 3"},
        {"1", "it has 1 numeric part, not 3"},
        {"1.2.3.4", "it has 4 numeric parts, not 3"},
        {"01.2.3", "\"01\" has a leading zero"},
        {"1.02.3", "\"02\" has a leading zero"},
        {"1.2.00", "\"00\" has a leading zero"},
        {"1..3", "a numeric part is empty"},
        {"1.x.3", "\"x\" is not a number"},
        {"1.2.3-", "nothing follows \"-\""},
        {"1.2.3+", "nothing follows \"+\""},
        {"1.2.3-alpha..1", "has an empty identifier"},
        {"1.2.3-alpha.", "has an empty identifier"},
        {"1.2.3+b..5", "has an empty identifier"},
        {"1.2.3-01", "\"01\" has a leading zero"},
        {"1.2.3-a_b", "\"a_b\" may contain only letters, digits and \"-\""},
        {"1.2.3+b$", "\"b$\" may contain only letters, digits and \"-\""},
        {" 1.2.3", "white space"},
        {"1.2.3\n", "white space"},
        {"vv1.2.3", "\"v1\" is not a number"},
        {"V1.2.3", "is not a number"},
        {"-1.2.3", "does not start with a number"},
        {"+1.2.3", "does not start with a number"},
        {"1.2.3 -beta", "is not a number"},
        {"18446744073709551616.0.0", "is too large"},
    }));
    CAPTURE(input);
    CHECK_FALSE(try_parse_semver(input));
    try {
        (void)parse_semver(input);
        FAIL("accepted " << input);
    } catch (const Error& e) {
        CHECK(e.code() == ErrorCode::bad_request);
        CHECK_THAT(e.what(), Contains(reason) && Contains("is not a version (MAJOR.MINOR.PATCH"));
    }
}

TEST_CASE("leading zeros are allowed in build metadata only", "[proto][semver]") {
    CHECK(try_parse_semver("1.0.0+001"));
    CHECK(try_parse_semver("1.0.0-a001"));
    CHECK(try_parse_semver("1.0.0-0"));
    CHECK_FALSE(try_parse_semver("1.0.0-001"));
}

TEST_CASE("precedence follows semver.org's example chain", "[proto][semver]") {
    const std::vector<SemVer> chain = {
        parse_semver("1.0.0-alpha"),
        parse_semver("1.0.0-alpha.1"),
        parse_semver("1.0.0-alpha.beta"),
        parse_semver("1.0.0-beta"),
        parse_semver("1.0.0-beta.2"),
        parse_semver("1.0.0-beta.11"),
        parse_semver("1.0.0-rc.1"),
        parse_semver("1.0.0"),
        parse_semver("1.0.1"),
        parse_semver("1.1.0"),
        parse_semver("2.0.0"),
        parse_semver("10.0.0"),
    };
    for (std::size_t i = 0; i < chain.size(); ++i) {
        for (std::size_t j = 0; j < chain.size(); ++j) {
            CAPTURE(chain[i].to_string(), chain[j].to_string());
            CHECK((chain[i] < chain[j]) == (i < j));
            CHECK((chain[i] == chain[j]) == (i == j));
            CHECK((hostkeeper::proto::compare(chain[i], chain[j]) > 0) == (i > j));
        }
    }
}

TEST_CASE("precedence ignores build metadata and compares numbers as numbers", "[proto][semver]") {
    CHECK(parse_semver("1.0.0+a") == parse_semver("1.0.0+b"));
    CHECK(parse_semver("1.0.0+a") == parse_semver("1.0.0"));
    CHECK_FALSE(parse_semver("1.0.0+b") < parse_semver("1.0.0+a"));
    CHECK(parse_semver("1.0.0-beta+x") == parse_semver("1.0.0-beta+y"));
    CHECK(parse_semver("1.9.0") < parse_semver("1.10.0"));
    CHECK(parse_semver("1.0.0-9") < parse_semver("1.0.0-10"));
    CHECK(parse_semver("1.0.0-10") < parse_semver("1.0.0-a"));  // numeric below alphanumeric
    CHECK(parse_semver("1.0.0-B") < parse_semver("1.0.0-a"));   // ASCII order
    CHECK(parse_semver("1.0.0-99999999999999999999999") <
          parse_semver("1.0.0-100000000000000000000000"));
    CHECK(parse_semver("1.0.0") != parse_semver("1.0.0-0"));
    CHECK(parse_semver("2.0.0") >= parse_semver("2.0.0"));
    CHECK(parse_semver("2.0.0") <= parse_semver("2.0.0+x"));
    CHECK(parse_semver("2.0.0") > parse_semver("2.0.0-rc.1"));
}

TEST_CASE("each constraint operator", "[proto][semver]") {
    const auto [constraint, version, allowed] = GENERATE(table<const char*, const char*, bool>({
        {"1.2.3", "1.2.3", true},    {"1.2.3", "1.2.4", false},
        {"= 1.2.3", "1.2.3", true},  {"=1.2.3", "1.2.3+build", true},
        {"= 1.2", "1.2.0", true},    {"= 1.2", "1.2.1", false},
        {"1", "1.0.0", true},        {"!= 1.2.3", "1.2.3", false},
        {"!=1.2.3", "1.2.4", true},  {"> 1.2.3", "1.2.3", false},
        {"> 1.2.3", "1.2.4", true},  {">1.2", "1.2.1", true},
        {">= 1.2.3", "1.2.3", true}, {">= 1.2.3", "1.2.2", false},
        {">=1.2.3", "2.0.0", true},  {"< 2", "1.99.99", true},
        {"< 2", "2.0.0", false},     {"<= 2.0", "2.0.0", true},
        {"<= 2.0", "2.0.1", false},  {"<=2.0.0", "1.0.0", true},
    }));
    CAPTURE(constraint, version);
    CHECK(allows(constraint, version) == allowed);
}

TEST_CASE("the pessimistic operator ~> lets only the rightmost given part increase",
          "[proto][semver]") {
    const auto [constraint, version, allowed] = GENERATE(table<const char*, const char*, bool>({
        // three parts: >= 1.2.3, < 1.3.0
        {"~> 1.2.3", "1.2.2", false},
        {"~> 1.2.3", "1.2.3", true},
        {"~> 1.2.3", "1.2.99", true},
        {"~> 1.2.3", "1.3.0", false},
        {"~> 1.2.3", "2.2.3", false},
        // two parts: >= 1.2.0, < 2.0.0
        {"~> 1.2", "1.1.9", false},
        {"~> 1.2", "1.2.0", true},
        {"~> 1.2", "1.99.0", true},
        {"~> 1.2", "2.0.0", false},
        // one part: >= 1.0.0, < 2.0.0 (go-versions, not hashicorp/go-version)
        {"~> 1", "0.9.9", false},
        {"~> 1", "1.0.0", true},
        {"~> 1", "1.99.99", true},
        {"~> 1", "2.0.0", false},
        {"~>0.12", "0.15.5", true},
        {"~>0.12", "1.0.0", false},
        {"~> 0", "0.0.1", true},
    }));
    CAPTURE(constraint, version);
    CHECK(allows(constraint, version) == allowed);
}

TEST_CASE("every constraint of a comma list must allow the version", "[proto][semver]") {
    CHECK(allows(">= 1.2, < 2.0", "1.5.0"));
    CHECK_FALSE(allows(">= 1.2, < 2.0", "2.0.0"));
    CHECK_FALSE(allows(">= 1.2, < 2.0", "1.1.0"));
    CHECK(allows("  >=1.2 ,<2.0,!= 1.5.0 ", "1.6.0"));
    CHECK_FALSE(allows("  >=1.2 ,<2.0,!= 1.5.0 ", "1.5.0"));
    CHECK_FALSE(allows("~> 1.2, ~> 1.3.0", "1.2.5"));
    CHECK(allows("~> 1.2, ~> 1.3.0", "1.3.5"));
    CHECK(VersionConstraints::parse(" >= 1.2, < 2.0 ").text() == " >= 1.2, < 2.0 ");
}

TEST_CASE("a pre-release is allowed only when named exactly", "[proto][semver]") {
    CHECK_FALSE(allows(">= 1.0.0-beta", "1.0.0-beta"));
    CHECK_FALSE(allows(">= 0.9", "1.0.0-beta"));
    CHECK_FALSE(allows("~> 1.0.0-beta", "1.0.0-beta"));
    CHECK(allows("= 1.0.0-beta", "1.0.0-beta"));
    CHECK(allows("1.0.0-beta", "1.0.0-beta"));
    CHECK(allows("1.0.0-beta", "1.0.0-beta+build.7"));
    CHECK(allows("1.0.0-beta, < 2", "1.0.0-beta"));
    CHECK(allows(">= 0.9, 1.0.0-beta", "1.0.0-beta"));
    CHECK_FALSE(allows("1.0.0-beta, > 1.0.0-beta", "1.0.0-beta"));
    CHECK_FALSE(allows("1.0.0-beta, != 1.0.0-beta", "1.0.0-beta"));
    CHECK_FALSE(allows("1.0.0-beta", "1.0.0-rc"));
    CHECK_FALSE(allows("1.0.0-beta", "1.0.0"));
    CHECK_FALSE(allows("1.0.0-beta, >= 1.0.0-beta", "1.0.0-rc"));
    CHECK(allows("1-beta", "1.0.0-beta"));
    // A release above a pre-release bound is allowed as usual.
    CHECK(allows(">= 1.0.0-beta", "1.0.0"));
    // The ~> upper edge leaves out the next minor's pre-releases too.
    CHECK_FALSE(allows("~> 1.2.3, 1.3.0-beta", "1.3.0-beta"));
}

TEST_CASE("bad constraints are refused naming the bad part", "[proto][semver]") {
    const auto [input, reason] = GENERATE(table<const char*, const char*>({
        {"~> 1.x, <2",
         "invalid version constraint \"~> 1.x, <2\": \"1.x\" is not a version number"},
        {"~> 1.x", "\"x\" is not a number"},
        {"=> 1.0", "unknown operator \"=>\"; did you mean \">=\"?"},
        {"=< 1.0", "unknown operator \"=<\"; did you mean \"<=\"?"},
        {"== 1.0", "unknown operator \"==\""},
        {"^1.2", "unknown operator \"^\""},
        {"~1.2", "unknown operator \"~\""},
        {">= 1.0,, < 2", "empty constraint between commas"},
        {", >= 1.0", "empty constraint before the first comma"},
        {">= 1.0,", "empty constraint after the last comma"},
        {">= 1.0, ", "empty constraint after the last comma"},
        {">=", "no version after \">=\""},
        {"~>  ", "no version after \"~>\""},
        {">= 1.0 < 2.0", "a comma is missing in \">= 1.0 < 2.0\""},
        {"1.2.3.4", "\"1.2.3.4\" is not a version number: it has 4 numeric parts, at most 3"},
        {">= v1.2", "\"v1.2\" is not a version number: version constraints take no \"v\" prefix"},
        {"1.02", "\"02\" has a leading zero"},
        {"1.0.0-", "nothing follows \"-\""},
        {"1.0.0-beta..1", "has an empty identifier"},
        {">= 1.0.0-beta_1", "may contain only letters, digits and \"-\""},
        {"1.0.0+", "nothing follows \"+\""},
        {"latest", "\"latest\" is not a version number"},
        {"*", "\"*\" is not a version number"},
    }));
    CAPTURE(input);
    try {
        (void)VersionConstraints::parse(input);
        FAIL("accepted " << input);
    } catch (const Error& e) {
        CHECK(e.code() == ErrorCode::bad_request);
        CHECK_THAT(e.what(), Contains(reason) && Contains("invalid version constraint \"" +
                                                          std::string(input) + "\""));
    }
}

TEST_CASE("an empty constraint is refused", "[proto][semver]") {
    CHECK_THROWS_WITH(VersionConstraints::parse(""), "a version constraint cannot be empty");
    CHECK_THROWS_WITH(VersionConstraints::parse(" \t "), "a version constraint cannot be empty");
    CHECK_THROWS_AS(VersionConstraints::parse(","), Error);
    CHECK_THROWS_WITH(VersionConstraints::parse(" , "),
                      Contains("empty constraint before the first comma"));
}

TEST_CASE("build metadata in a constraint is tolerated and ignored", "[proto][semver]") {
    CHECK(allows("= 1.2.3+abc", "1.2.3"));
    CHECK(allows("= 1.2.3+abc", "1.2.3+def"));
    CHECK(allows("< 1.2.3+abc", "1.2.2"));
}

}  // namespace test_semver
