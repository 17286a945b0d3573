// Versions as registries publish them and constraints as users write them.
// The input is split at its first NUL: a constraint (or version) and a version.
// A version accepted prints in a canonical form that parses back equal, and
// precedence is a consistent order.
#include <optional>

#include "fuzz_support.hpp"
#include "proto/error.hpp"
#include "proto/semver.hpp"

using namespace hostkeeper;
using proto::SemVer;

namespace {

int sign(int n) {
    return (n > 0) - (n < 0);
}

std::optional<SemVer> version(std::string_view text) {
    const std::optional<SemVer> tried = proto::try_parse_semver(text);
    try {
        const SemVer parsed = proto::parse_semver(text);
        fuzz::require(tried.has_value(), "parse_semver accepts what try_parse_semver refuses");
        fuzz::require(parsed.to_string() == tried->to_string(), "the two parsers disagree");
    } catch (const proto::Error& e) {
        fuzz::require(!tried, "try_parse_semver accepts what parse_semver refuses");
        fuzz::require(e.code() == proto::ErrorCode::bad_request,
                      "parse_semver threw other than bad_request");
    }
    if (!tried) return tried;
    const std::string canonical = tried->to_string();
    const std::optional<SemVer> again = proto::try_parse_semver(canonical);
    fuzz::require(again.has_value(), "a version's canonical form does not parse");
    fuzz::require(again->to_string() == canonical, "a version's canonical form is not canonical");
    fuzz::require(proto::compare(*again, *tried) == 0,
                  "a version is not equal to its canonical form");
    fuzz::require(again->build == tried->build && again->prerelease == tried->prerelease,
                  "the canonical form loses pre-release or build");
    return tried;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
    const auto [first, second] = fuzz::split_at_nul(fuzz::text_of(data, size));
    const auto a = version(first);
    const auto b = version(second);
    if (a && b) {
        fuzz::require(sign(proto::compare(*a, *b)) == -sign(proto::compare(*b, *a)),
                      "compare is not antisymmetric");
        fuzz::require((*a < *b) + (*a == *b) + (*a > *b) == 1, "versions are not totally ordered");
    }
    try {
        const auto constraints = proto::VersionConstraints::parse(first);
        fuzz::require(constraints.text() == first, "constraints do not keep their text");
        const auto reparsed = proto::VersionConstraints::parse(constraints.text());
        if (b) {
            fuzz::require(constraints.allows(*b) == reparsed.allows(*b),
                          "constraints parse differently twice");
            const auto canonical = proto::try_parse_semver(b->to_string());
            fuzz::require(constraints.allows(*b) == constraints.allows(*canonical),
                          "constraints judge a version and its canonical form differently");
        }
    } catch (const proto::Error& e) {
        fuzz::require(e.code() == proto::ErrorCode::bad_request,
                      "constraints threw other than bad_request");
    }
    return 0;
}
