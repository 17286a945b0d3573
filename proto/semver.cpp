#include "proto/semver.hpp"

#include <algorithm>
#include <array>
#include <charconv>
#include <utility>

#include "proto/error.hpp"
#include "proto/text_rules.hpp"

namespace hostkeeper::proto {
namespace {

constexpr std::string_view kWhiteSpace = " \t\r\n";

bool is_letter(char c) {
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z');
}
bool is_identifier_char(char c) {
    return is_digit(c) || is_letter(c) || c == '-';
}
bool is_numeric(std::string_view s) {
    return !s.empty() && std::all_of(s.begin(), s.end(), is_digit);
}
bool is_space(char c) {
    return kWhiteSpace.find(c) != npos;
}

std::string_view trim(std::string_view s) {
    const auto first = s.find_first_not_of(kWhiteSpace);
    if (first == npos) return {};
    return s.substr(first, s.find_last_not_of(kWhiteSpace) - first + 1);
}

// The next dot-separated identifier of `ids` from `pos`; `pos` becomes npos after the last.
std::string_view next_identifier(std::string_view ids, std::size_t& pos) {
    const auto dot = ids.find('.', pos);
    const auto id = ids.substr(pos, dot == npos ? npos : dot - pos);
    pos = dot == npos ? npos : dot + 1;
    return id;
}

// Why `text` is not a numeric part ("" when it is one); its value in `value`.
std::string check_number(std::string_view text, std::uint64_t& value) {
    if (text.empty()) return "a numeric part is empty";
    if (!is_numeric(text)) return quoted(text) + " is not a number";
    if (text.size() > 1 && text.front() == '0') return quoted(text) + " has a leading zero";
    if (std::from_chars(text.data(), text.data() + text.size(), value).ec != std::errc{}) {
        return quoted(text) + " is too large";
    }
    return {};
}

// Why the identifiers after '-' (pre-release) or '+' (build) are not valid,
// "" when they are. Only pre-release numbers are held to "no leading zeros".
std::string check_identifiers(std::string_view ids, char sign) {
    const std::string what = sign == '-' ? "pre-release" : "build metadata";
    if (ids.empty()) return std::string("nothing follows \"") + sign + '"';
    std::size_t pos = 0;
    while (pos != npos) {
        const auto id = next_identifier(ids, pos);
        if (id.empty()) return "the " + what + " " + quoted(ids) + " has an empty identifier";
        if (!std::all_of(id.begin(), id.end(), is_identifier_char)) {
            return what + " identifier " + quoted(id) +
                   " may contain only letters, digits and \"-\"";
        }
        if (sign == '-' && is_numeric(id) && id.size() > 1 && id.front() == '0') {
            return what + " identifier " + quoted(id) + " has a leading zero";
        }
    }
    return {};
}

struct Pieces {
    std::array<std::uint64_t, 3> numbers{};
    std::size_t parts = 0;
    std::string_view prerelease;
    std::string_view build;
};

// Splits "1.2.3-pre+build" with `min_parts` to 3 numeric parts. Returns why
// it is not such a version, "" when it is.
std::string split_version(std::string_view text, std::size_t min_parts, Pieces& out) {
    const auto plus = text.find('+');
    const auto dash = text.substr(0, plus).find('-');
    const auto core = text.substr(0, std::min(plus, dash));
    if (core.empty()) return "it does not start with a number";
    out.parts = static_cast<std::size_t>(std::count(core.begin(), core.end(), '.')) + 1;
    if (out.parts < min_parts || out.parts > 3) {
        return "it has " + std::to_string(out.parts) + " numeric part" +
               (out.parts == 1 ? "" : "s") + (min_parts == 3 ? ", not 3" : ", at most 3");
    }
    std::size_t pos = 0;
    for (std::size_t i = 0; i < out.parts; ++i) {
        std::string why = check_number(next_identifier(core, pos), out.numbers.at(i));
        if (!why.empty()) return why;
    }
    if (dash != npos) {
        out.prerelease = text.substr(dash + 1, plus == npos ? npos : plus - dash - 1);
        std::string why = check_identifiers(out.prerelease, '-');
        if (!why.empty()) return why;
    }
    if (plus != npos) {
        out.build = text.substr(plus + 1);
        return check_identifiers(out.build, '+');
    }
    return {};
}

SemVer to_semver(const Pieces& pieces) {
    return SemVer{pieces.numbers[0], pieces.numbers[1], pieces.numbers[2],
                  std::string(pieces.prerelease), std::string(pieces.build)};
}

// Why `text` is not a semantic version, "" when it is one (then in `out`).
std::string semver_problem(std::string_view text, SemVer& out) {
    if (text.empty()) return "it is empty";
    if (is_space(text.front()) || is_space(text.back())) return "it has white space around it";
    if (text.front() == 'v') text.remove_prefix(1);
    Pieces pieces;
    std::string why = split_version(text, 3, pieces);
    if (why.empty()) out = to_semver(pieces);
    return why;
}

int compare_identifier(std::string_view a, std::string_view b) {
    const bool a_numeric = is_numeric(a);
    const bool b_numeric = is_numeric(b);
    if (a_numeric != b_numeric) return a_numeric ? -1 : 1;
    if (a_numeric) {
        // By length, then digits: no overflow, whatever the size.
        a.remove_prefix(std::min(a.find_first_not_of('0'), a.size()));
        b.remove_prefix(std::min(b.find_first_not_of('0'), b.size()));
        if (a.size() != b.size()) return a.size() < b.size() ? -1 : 1;
    }
    const int order = a.compare(b);
    return (order > 0) - (order < 0);
}

int compare_prerelease(std::string_view a, std::string_view b) {
    if (a.empty() || b.empty()) return static_cast<int>(a.empty()) - static_cast<int>(b.empty());
    std::size_t a_pos = 0;
    std::size_t b_pos = 0;
    while (a_pos != npos && b_pos != npos) {
        const int order = compare_identifier(next_identifier(a, a_pos), next_identifier(b, b_pos));
        if (order != 0) return order;
    }
    if (a_pos == b_pos) return 0;
    return a_pos == npos ? -1 : 1;  // the shorter set is lower
}

[[noreturn]] void reject_constraint(std::string_view text, const std::string& why) {
    throw Error(ErrorCode::bad_request, "invalid version constraint " + quoted(text) + ": " + why);
}

// As apparentlymart/go-versions scans an operator: anything up to the version.
bool is_operator_char(char c) {
    return !is_digit(c) && !is_letter(c) && !is_space(c) && c != '.' && c != '*';
}

}  // namespace

std::string SemVer::to_string() const {
    std::string text =
        std::to_string(major) + '.' + std::to_string(minor) + '.' + std::to_string(patch);
    if (!prerelease.empty()) text += '-' + prerelease;
    if (!build.empty()) text += '+' + build;
    return text;
}

std::optional<SemVer> try_parse_semver(std::string_view text) {
    SemVer version;
    if (!semver_problem(text, version).empty()) return std::nullopt;
    return version;
}

SemVer parse_semver(std::string_view text) {
    SemVer version;
    const std::string why = semver_problem(text, version);
    if (!why.empty()) {
        throw Error(ErrorCode::bad_request,
                    quoted(text) + " is not a version (MAJOR.MINOR.PATCH, e.g. 1.4.0): " + why);
    }
    return version;
}

int compare(const SemVer& a, const SemVer& b) {
    if (a.major != b.major) return a.major < b.major ? -1 : 1;
    if (a.minor != b.minor) return a.minor < b.minor ? -1 : 1;
    if (a.patch != b.patch) return a.patch < b.patch ? -1 : 1;
    return compare_prerelease(a.prerelease, b.prerelease);
}

VersionConstraints VersionConstraints::parse(std::string_view text) {
    if (trim(text).empty()) {
        throw Error(ErrorCode::bad_request, "a version constraint cannot be empty");
    }
    std::vector<Constraint> constraints;
    std::size_t start = 0;
    while (true) {
        const auto comma = text.find(',', start);
        const auto part = trim(text.substr(start, comma == npos ? npos : comma - start));
        if (part.empty()) {
            reject_constraint(text, start == 0      ? "empty constraint before the first comma"
                                    : comma == npos ? "empty constraint after the last comma"
                                                    : "empty constraint between commas");
        }
        constraints.push_back(parse_constraint(text, part));
        if (comma == npos) break;
        start = comma + 1;
    }
    return VersionConstraints(std::string(text), std::move(constraints));
}

VersionConstraints::Constraint VersionConstraints::parse_constraint(std::string_view text,
                                                                    std::string_view part) {
    static constexpr std::array<std::pair<std::string_view, Operator>, 8> kOperators{{
        {"", Operator::eq},
        {"=", Operator::eq},
        {"!=", Operator::ne},
        {">", Operator::gt},
        {">=", Operator::ge},
        {"<", Operator::lt},
        {"<=", Operator::le},
        {"~>", Operator::pessimistic},
    }};
    const auto op_end = static_cast<std::size_t>(
        std::find_if_not(part.begin(), part.end(), is_operator_char) - part.begin());
    const auto op_text = part.substr(0, op_end);
    const auto* const op = std::find_if(kOperators.begin(), kOperators.end(),
                                        [&](const auto& known) { return known.first == op_text; });
    if (op == kOperators.end()) {
        std::string why = "unknown operator " + quoted(op_text);
        if (op_text == "=>") why += "; did you mean \">=\"?";
        if (op_text == "=<") why += "; did you mean \"<=\"?";
        if (op_text == "==") why += "; did you mean \"=\"?";
        reject_constraint(text, why);
    }
    const auto version = trim(part.substr(op_end));
    if (version.empty()) reject_constraint(text, "no version after " + quoted(op_text));
    if (std::any_of(version.begin(), version.end(), is_space)) {
        reject_constraint(text, "a comma is missing in " + quoted(part));
    }
    if (version.front() == 'v') {
        reject_constraint(
            text,
            quoted(version) + " is not a version number: version constraints take no \"v\" prefix");
    }
    Pieces pieces;
    const std::string why = split_version(version, 1, pieces);
    if (!why.empty()) reject_constraint(text, quoted(version) + " is not a version number: " + why);
    return Constraint{op->second, to_semver(pieces), pieces.parts};
}

bool VersionConstraints::allows_one(const Constraint& constraint, const SemVer& version) {
    const SemVer& bound = constraint.version;
    switch (constraint.op) {
        case Operator::eq:
            return version == bound;
        case Operator::ne:
            return !(version == bound);
        case Operator::gt:
            return version > bound;
        case Operator::ge:
            return version >= bound;
        case Operator::lt:
            return version < bound;
        case Operator::le:
            return version <= bound;
        case Operator::pessimistic:
            // Only the rightmost part given may increase: "~> 1.2.3" is
            // ">= 1.2.3, < 1.3.0"; "~> 1.2" and "~> 1" are "< 2.0.0". This is
            // how apparentlymart/go-versions reads it, which Terraform uses
            // for providers; hashicorp/go-version reads "~> 1" without an
            // upper bound. Comparing the parts leaves out 1.3.0-beta too.
            if (version < bound || version.major != bound.major) return false;
            return constraint.parts < 3 || version.minor == bound.minor;
    }
    return false;
}

bool VersionConstraints::allows(const SemVer& version) const {
    const auto allowed = [&](const Constraint& c) { return allows_one(c, version); };
    if (!std::all_of(constraints_.begin(), constraints_.end(), allowed)) return false;
    if (!version.is_prerelease()) return true;
    // A pre-release only by name: "= 1.0.0-beta" or "1.0.0-beta".
    return std::any_of(constraints_.begin(), constraints_.end(), [&](const Constraint& c) {
        return c.op == Operator::eq && c.version == version;
    });
}

}  // namespace hostkeeper::proto
