#pragma once
// PKCE (RFC 7636) for a login.v1 authorization: the code verifier and
// state, random from OpenSSL's RAND_bytes, and the S256 code challenge.

#include <string>
#include <string_view>

namespace hostkeeper::daemon::discovery {

// 32 random bytes in base64url without padding: 43 characters. Throws
// std::runtime_error when the random source fails.
std::string random_urlsafe();

// BASE64URL(SHA256(verifier)) without padding: the "S256" code_challenge.
std::string pkce_challenge(std::string_view verifier);

}  // namespace hostkeeper::daemon::discovery
