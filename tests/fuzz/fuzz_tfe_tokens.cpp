// HCP Terraform's and Terraform Enterprise's answers that `rotate` and
// `check` read: a created authentication token (POST
// users/:id/authentication-tokens), the user's token list (GET, the same
// path), a JSON:API error body, account/details' user id, and an RFC 3339
// expiry. Never a crash; a token read is never empty, a listed token has an
// id, an error text is one bounded line.
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
        const daemon::discovery::TokenList list = daemon::discovery::read_token_list(body);
        fuzz::require(list.total >= list.tokens.size(), "fewer tokens in all than listed");
        for (const auto& token : list.tokens)
            fuzz::require(!token.id.empty(), "a listed token without an id");
        const auto chosen = daemon::discovery::expiry_in_list(list, "at-1");
        fuzz::require(chosen.found != !chosen.why.empty(), "an expiry both found and not");
    } catch (const std::runtime_error&) {
    }
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
