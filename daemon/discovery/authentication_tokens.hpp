#pragma once
// HCP Terraform's and Terraform Enterprise's user token documents
// (tfe.v2, JSON:API): the body that asks for a new authentication token, the
// token in the answer, the user's tokens as listed (and which one's expiry
// is the stored token's), and a JSON:API error's words for the user. Pure:
// no I/O.

#include <chrono>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "proto/secret.hpp"

namespace hostkeeper::daemon::discovery {

inline constexpr std::string_view kJsonApiMediaType = "application/vnd.api+json";

// A token as created (POST users/:id/authentication-tokens answered 201).
struct CreatedToken {
    std::string id;          // data.id: "at-..."
    proto::Secret token;     // data.attributes.token
    std::string expired_at;  // data.attributes.expired-at ("" when the answer gives none)
};

// A token as listed (GET users/:id/authentication-tokens answered 200):
// metadata only, never the token itself.
struct ListedToken {
    std::string id;  // data[].id: "at-..."
    std::optional<std::chrono::system_clock::time_point>
        expires;  // attributes.expired-at; nullopt: null (never)
};

// The user's tokens on one page of the list, and how many there are in all
// (meta.pagination.total-count, else the page's). Throws std::runtime_error
// naming what is wrong (not JSON, no "data" array, an entry without an id,
// an "expired-at" that is neither null nor RFC 3339); never quotes the body.
struct TokenList {
    std::vector<ListedToken> tokens;
    std::size_t total = 0;
};
TokenList read_token_list(std::string_view body);

// Which listed token's expiry is the stored token's: the one with
// `known_id` (the "token_id" hostkeeper stored when it created it), else the
// only one. `found` false when neither says: `why` then says so ("N tokens
// for this user"), and nothing is guessed.
struct ListedExpiry {
    bool found = false;
    std::optional<std::chrono::system_clock::time_point> expires;  // found: nullopt = never expires
    std::string why;
};
ListedExpiry expiry_in_list(const TokenList& list, const std::string& known_id);

// The body that creates a token: a JSON:API document with `description` and
// "expired-at" at `expires`.
std::string token_request_body(const std::string& description,
                               std::chrono::system_clock::time_point expires);

// A created token's document. Throws std::runtime_error naming what is
// missing (never quoting the body: it holds a token); the parsed body is
// scrubbed.
CreatedToken read_created_token(std::string_view body);

// The first JSON:API error's "detail" (else its "title") of an error body,
// one line of at most 200 bytes (UTF-8, cut between characters) without
// control characters; "" when the body holds none.
std::string json_api_error(std::string_view body);

// The "token_id" string of a stored credentials object (compact JSON text):
// the id of a token hostkeeper created; "" when there is none.
std::string stored_token_id(const proto::Secret& credentials);

// The stored credentials object after a rotation: `old`'s members (when it
// is a JSON object) with "token", "expires_at" and "token_id" of `created`.
proto::Secret rotated_credentials(const proto::Secret& old, const CreatedToken& created,
                                  const std::string& expires_at);

// The "expires_at" of a stored credentials object, read as RFC 3339
// (credentials::parse_rfc3339):
// nullopt when there is none or it is not a time.
std::optional<std::chrono::system_clock::time_point> stored_expiry(
    const proto::Secret& credentials);

}  // namespace hostkeeper::daemon::discovery
