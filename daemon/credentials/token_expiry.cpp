#include "daemon/credentials/token_expiry.hpp"

#include <array>
#include <charconv>
#include <ctime>
#include <exception>
#include <regex>

namespace hostkeeper::daemon::credentials {
namespace {

constexpr std::size_t kMaxTimestamp = 64;

// RFC 3339's date-time (section 5.6), fractions to the nanosecond: the
// shape here, the ranges (month days, leap years) by std::chrono.
const std::regex& timestamp_shape() {
    static const std::regex shape(
        R"(^(\d{4})-(\d{2})-(\d{2})[Tt ](\d{2}):(\d{2}):(\d{2})(?:\.(\d{1,9}))?)"
        R"((?:[Zz]|([+-])(\d{2}):(\d{2}))$)");
    return shape;
}

int number(const std::csub_match& digits) {
    int value = 0;
    (void)std::from_chars(digits.first, digits.second, value);
    return value;
}

// ".5" as 500000000 nanoseconds.
long long nanoseconds(const std::csub_match& digits) {
    std::string text = digits.str();
    text.resize(9, '0');
    long long value = 0;
    (void)std::from_chars(text.data(), text.data() + text.size(), value);
    return value;
}

}  // namespace

std::optional<WallTime> parse_rfc3339(std::string_view text) {
    std::cmatch m;
    if (text.size() > kMaxTimestamp ||
        !std::regex_match(text.data(), text.data() + text.size(), m, timestamp_shape())) {
        return std::nullopt;
    }
    const std::chrono::year_month_day date{std::chrono::year{number(m[1])},
                                           std::chrono::month{static_cast<unsigned>(number(m[2]))},
                                           std::chrono::day{static_cast<unsigned>(number(m[3]))}};
    const int hour = number(m[4]);
    const int minute = number(m[5]);
    const int second = number(m[6]);
    const int offset_hours = m[8].matched ? number(m[9]) : 0;
    const int offset_minutes = m[8].matched ? number(m[10]) : 0;
    // The wall clock's nanoseconds reach 2262: later years are not taken.
    if (!date.ok() || date.year() < std::chrono::year{1970} ||
        date.year() > std::chrono::year{2200} || hour > 23 || minute > 59 || second > 59 ||
        offset_hours > 23 || offset_minutes > 59) {
        return std::nullopt;
    }
    const std::chrono::minutes offset{(offset_hours * 60 + offset_minutes) *
                                      (m[8].matched && *m[8].first == '-' ? -1 : 1)};
    const auto local = std::chrono::sys_days{date} + std::chrono::hours{hour} +
                       std::chrono::minutes{minute} + std::chrono::seconds{second} +
                       std::chrono::nanoseconds{m[7].matched ? nanoseconds(m[7]) : 0};
    return std::chrono::time_point_cast<WallTime::duration>(local - offset);
}

std::string rfc3339_text(WallTime when) {
    const std::time_t t = std::chrono::system_clock::to_time_t(when);
    std::tm utc{};
    ::gmtime_r(&t, &utc);
    std::array<char, 32> text{};
    const std::size_t n = std::strftime(text.data(), text.size(), "%Y-%m-%dT%H:%M:%SZ", &utc);
    return {text.data(), n};
}

std::optional<WallTime> expiry_of(const proto::Json& credentials, proto::ErrorCode code,
                                  const std::string& what) {
    if (!credentials.is_object()) return std::nullopt;
    const auto found = credentials.find(kExpiresAt);
    if (found == credentials.end()) return std::nullopt;
    if (found->is_string()) {
        if (auto when = parse_rfc3339(found->get_ref<const std::string&>())) return when;
    }
    const std::string shown =
        found->dump(-1, ' ', true, proto::Json::error_handler_t::replace).substr(0, kMaxTimestamp);
    throw proto::Error(code, what + ": \"" + kExpiresAt + "\" must be an RFC 3339 date-time " +
                                 "with an offset, as 2026-12-01T09:30:00Z (not " + shown + ")");
}

proto::Json parsed_credentials(const proto::Secret& credentials) {
    try {
        return proto::parse_json(credentials.view());
    } catch (const std::exception&) {
        return nullptr;
    }
}

std::optional<WallTime> expiry_of(const proto::Secret& credentials, proto::ErrorCode code,
                                  const std::string& what) {
    proto::Json object = parsed_credentials(credentials);
    const proto::ScrubGuard guard(object);
    return expiry_of(object, code, what);
}

std::optional<WallTime> rotated_at_of(const proto::Secret& credentials) {
    proto::Json object = parsed_credentials(credentials);
    const proto::ScrubGuard guard(object);
    if (!object.is_object()) return std::nullopt;
    const auto found = object.find(kRotatedAt);
    if (found == object.end() || !found->is_string()) return std::nullopt;
    return parse_rfc3339(found->get_ref<const std::string&>());
}

ExpiryStage expiry_stage(WallTime expires, WallTime now) {
    using std::chrono::hours;
    const auto left = expires - now;
    if (left <= WallTime::duration::zero()) return ExpiryStage::expired;
    if (left <= hours{24}) return ExpiryStage::within_1_day;
    if (left <= hours{24 * 7}) return ExpiryStage::within_7_days;
    if (left <= hours{24 * 30}) return ExpiryStage::within_30_days;
    return ExpiryStage::later;
}

std::string_view to_string(ExpiryStage stage) noexcept {
    switch (stage) {
        case ExpiryStage::later:
            return "later";
        case ExpiryStage::within_30_days:
            return "within_30_days";
        case ExpiryStage::within_7_days:
            return "within_7_days";
        case ExpiryStage::within_1_day:
            return "within_1_day";
        case ExpiryStage::expired:
            return "expired";
    }
    return "later";
}

std::string time_left(WallTime expires, WallTime now) {
    const long long days =
        std::chrono::duration_cast<std::chrono::hours>(expires - now).count() / 24;
    return days <= 0   ? std::string("under a day")
           : days == 1 ? std::string("1 day")
                       : std::to_string(days) + " days";
}

}  // namespace hostkeeper::daemon::credentials
