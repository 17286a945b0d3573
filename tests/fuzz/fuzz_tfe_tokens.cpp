// HCP Terraform's and Terraform Enterprise's answers that `rotate` reads:
// a created authentication token (POST users/:id/authentication-tokens), a
// JSON:API error body, account/details' user id, and an RFC 3339 expiry.
// Never a crash; a token read is never empty, an error text is one bounded
// line.
#include <stdexcept>

#include "daemon/discovery/account_details.hpp"
#include "daemon/discovery/authentication_tokens.hpp"
#include "fuzz_support.hpp"
#include "proto/json.hpp"

using namespace hostkeeper;

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
    const std::string_view body = fuzz::text_of(data, size);
    const std::string user = daemon::discovery::account_user_id(body);
    fuzz::require(user.size() <= body.size(), "a user id longer than the answer");
    const std::string error = daemon::discovery::json_api_error(body);
    fuzz::require(error.size() <= 200, "an error text over 200 bytes");
    (void)proto::Json(error).dump();  // throws (a crash) on UTF-8 cut in two
    for (const char c : error)
        fuzz::require(static_cast<unsigned char>(c) >= 0x20 && c != 0x7f,
                      "a control character in an error text");
    try {
        const daemon::discovery::CreatedToken created = daemon::discovery::read_created_token(body);
        fuzz::require(!created.id.empty() && !created.token.empty(),
                      "a created token without id or token");
        const proto::Secret stored = daemon::discovery::rotated_credentials(
            proto::Secret(body), created, created.expired_at);
        fuzz::require(proto::parse_json(stored.view()).is_object(),
                      "rotated credentials that are not an object");
    } catch (const std::runtime_error&) {
        return 0;
    }
    return 0;
}
