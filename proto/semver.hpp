#pragma once
// Semantic versions (semver.org 2.0.0) and Terraform's version constraints
// (">= 1.2, < 2.0", "~> 1.4"), as registries publish the one and users write
// the other.

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace hostkeeper::proto {

struct SemVer {
    std::uint64_t major = 0;
    std::uint64_t minor = 0;
    std::uint64_t patch = 0;
    std::string prerelease;  // "beta.1" in 1.2.3-beta.1; empty for a release
    std::string build;       // "b5" in 1.2.3+b5; no part of precedence

    // "1.2.3-beta.1+b5": canonical, without a leading "v".
    std::string to_string() const;
    bool is_prerelease() const { return !prerelease.empty(); }
};

// Strict MAJOR.MINOR.PATCH[-PRERELEASE][+BUILD]: three numeric parts without
// leading zeros, identifiers of [0-9A-Za-z-] that are not empty, numeric
// pre-release identifiers without leading zeros. One leading "v" is
// tolerated ("v1.2.3": registries publish it); surrounding white space is not.
std::optional<SemVer> try_parse_semver(std::string_view text);
// As try_parse_semver; throws Error{bad_request} saying what is wrong, e.g.
// "\"1.2\" is not a version (MAJOR.MINOR.PATCH, e.g. 1.4.0): it has 2 numeric parts, not 3".
SemVer parse_semver(std::string_view text);

// Precedence per semver.org: negative, zero or positive. Build metadata is
// ignored; a pre-release is lower than its release; pre-release identifiers
// compare numerically when both are numeric, numeric below alphanumeric,
// ASCII otherwise, and a shorter set is lower when the rest is equal.
int compare(const SemVer& a, const SemVer& b);
// Precedence, not member-wise: 1.0.0+a == 1.0.0+b.
inline bool operator==(const SemVer& a, const SemVer& b) {
    return compare(a, b) == 0;
}
inline bool operator<(const SemVer& a, const SemVer& b) {
    return compare(a, b) < 0;
}
inline bool operator>(const SemVer& a, const SemVer& b) {
    return compare(a, b) > 0;
}
inline bool operator<=(const SemVer& a, const SemVer& b) {
    return compare(a, b) <= 0;
}
inline bool operator>=(const SemVer& a, const SemVer& b) {
    return compare(a, b) >= 0;
}

// A Terraform version constraint: comma-separated parts, each an optional
// operator (=, !=, >, >=, <, <=, ~>; none means =) and a version of 1 to 3
// numeric parts (missing parts are 0) with an optional -prerelease (+build is
// tolerated and ignored). A version is allowed when every part allows it; a
// pre-release only when, besides, one part is "=" (or bare) naming exactly it.
class VersionConstraints {
  public:
    // Throws Error{bad_request} naming the bad part and the whole text.
    static VersionConstraints parse(std::string_view text);

    bool allows(const SemVer& version) const;
    // As given to parse().
    const std::string& text() const { return text_; }

  private:
    enum class Operator { eq, ne, gt, ge, lt, le, pessimistic };
    struct Constraint {
        Operator op = Operator::eq;
        SemVer version;
        std::size_t parts = 3;  // numeric parts written: "~> 1.2" has 2
    };

    VersionConstraints(std::string text, std::vector<Constraint> constraints)
        : text_(std::move(text)), constraints_(std::move(constraints)) {}
    static Constraint parse_constraint(std::string_view text, std::string_view part);
    static bool allows_one(const Constraint& constraint, const SemVer& version);

    std::string text_;
    std::vector<Constraint> constraints_;
};

}  // namespace hostkeeper::proto
