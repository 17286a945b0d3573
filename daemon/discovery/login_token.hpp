#pragma once
// What a login.v1 token endpoint answers (RFC 6749 sections 5.1 and 5.2):
// the access token, its type (bearer), its lifetime (expires_in) and a
// refresh token, or the server's error and its description. Pure: no I/O.

#include <chrono>
#include <cstddef>
#include <optional>
#include <stdexcept>
#include <string>
#include <string_view>

#include "proto/secret.hpp"

namespace hostkeeper::daemon::discovery {

// The largest token response read.
inline constexpr std::size_t kMaxTokenResponse = std::size_t{64} * 1024;

class TokenResponseError : public std::runtime_error {
  public:
    using std::runtime_error::runtime_error;
};

struct LoginTokens {
    proto::Secret access_token;
    std::optional<proto::Secret> refresh_token;
    std::optional<std::chrono::seconds> expires_in;
};

// A successful response's body. Throws TokenResponseError naming what is
// wrong (never quoting a token): not a JSON object, over kMaxTokenResponse,
// nested too deeply, no string "access_token", a "token_type" other than
// bearer, an "expires_in" that is not a positive whole number of seconds
// (at most ten years), a "refresh_token" that is not a string.
LoginTokens parse_token_response(std::string_view body);

// An error response's "error" and "error_description" ("invalid_grant: the
// code has expired"), printable and cut to 300 bytes; "" when the body
// names no error.
std::string token_error(std::string_view body);

}  // namespace hostkeeper::daemon::discovery
