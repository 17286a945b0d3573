// The stored expiry reader (daemon/credentials/token_expiry.hpp): a
// credentials object's "expires_at", an RFC 3339 date-time. The input is
// the member's text.
#include <chrono>
#include <string>

#include "daemon/credentials/token_expiry.hpp"
#include "fuzz_support.hpp"
#include "proto/error.hpp"

using namespace hostkeeper;
using daemon::credentials::WallTime;

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
    const std::string_view text = fuzz::text_of(data, size);
    const std::optional<WallTime> parsed = daemon::credentials::parse_rfc3339(text);
    if (parsed) {
        // UTC to the second reads back as the same second (years 0000-9999).
        const std::string utc = daemon::credentials::rfc3339_text(*parsed);
        if (utc.size() == 20) {
            const auto again = daemon::credentials::parse_rfc3339(utc);
            fuzz::require(again.has_value(), "a formatted expiry does not parse");
            fuzz::require(*again == std::chrono::floor<std::chrono::seconds>(*parsed),
                          "a formatted expiry reads as another time");
        }
    }
    const proto::Json object = {{"token", "t"}, {"expires_at", std::string(text)}};
    try {
        const auto expiry =
            daemon::credentials::expiry_of(object, proto::ErrorCode::bad_request, "fuzz");
        fuzz::require(expiry == parsed, "expiry_of and parse_rfc3339 disagree");
    } catch (const proto::Error& e) {
        fuzz::require(!parsed, "a valid expires_at is refused");
        fuzz::require(e.code() == proto::ErrorCode::bad_request, "an expiry error of another kind");
    }
    return 0;
}
