#pragma once
// When a stored token stops being good: the "expires_at" member a
// credentials object may carry beside "token" (an RFC 3339 date-time with
// a UTC offset, read by toml++, whose offset date-time is RFC 3339's), and
// how near that is (the warnings 30, 7 and 1 day before).

#include <chrono>
#include <optional>
#include <string>
#include <string_view>

#include "daemon/credentials/keyring.hpp"
#include "proto/error.hpp"
#include "proto/json.hpp"
#include "proto/secret.hpp"

namespace hostkeeper::daemon::credentials {

// The credentials object's member that says when its token expires.
inline constexpr const char* kExpiresAt = "expires_at";
// The member `hostkeeper rotate` adds: when it made the token (RFC 3339).
inline constexpr const char* kRotatedAt = "rotated_at";

// The most a token is refreshed ahead of its expiry; a token that lives less
// than ten times this is refreshed a tenth of its lifetime ahead.
inline constexpr std::chrono::minutes kMaxRefreshAhead{5};

// `text` as an RFC 3339 date-time with "Z" or a numeric offset
// ("2026-12-01T09:30:00Z", "2026-12-01T10:30:00.5+01:00"); nullopt for
// anything else (no offset, no seconds, a leap second, more than 9
// fraction digits, a year before 1970 or after 2200, out of range, over 64
// bytes).
std::optional<WallTime> parse_rfc3339(std::string_view text);

// `when` in UTC to the second: "2026-12-01T09:30:00Z".
std::string rfc3339_text(WallTime when);

// The "expires_at" of a credentials object; nullopt when it has none.
// Throws proto::Error `code` naming `what` when it is there but not a
// string in RFC 3339 (its value is not secret, and is quoted).
std::optional<WallTime> expiry_of(const proto::Json& credentials, proto::ErrorCode code,
                                  const std::string& what);

// A credentials object's compact JSON text parsed, or null when it is not
// JSON; the caller scrubs it (proto::ScrubGuard).
proto::Json parsed_credentials(const proto::Secret& credentials);

// The same, of a credentials object's compact JSON text (as served); text
// that is not a JSON object has none.
std::optional<WallTime> expiry_of(const proto::Secret& credentials, proto::ErrorCode code,
                                  const std::string& what);

// The "rotated_at" of a credentials object's compact JSON text; nullopt
// when it has none or it is not an RFC 3339 date-time.
std::optional<WallTime> rotated_at_of(const proto::Secret& credentials);

// How near `expires` is at `now`; each stage is a warning's threshold.
enum class ExpiryStage { later, within_30_days, within_7_days, within_1_day, expired };
ExpiryStage expiry_stage(WallTime expires, WallTime now);
// "later", "within_30_days", "within_7_days", "within_1_day", "expired".
std::string_view to_string(ExpiryStage stage) noexcept;

// How long until `expires` at `now`, in whole days: "12 days", "1 day",
// "under a day" (also when it is past).
std::string time_left(WallTime expires, WallTime now);

}  // namespace hostkeeper::daemon::credentials
