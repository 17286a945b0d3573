#pragma once
// Is a host's stored token still good? Asked of the host itself, past every
// cache: its discovery document with the token (a refusal of the document
// is no verdict on the token: `unchecked`), then, where it offers
// tfe.v2, HCP Terraform's and Terraform Enterprise's "who am I"
// (tfe.v2 + account/details). The token only ever goes to its own host.
// For a valid token whose stored object has no expires_at, the user's token
// list (tfe.v2 + users/:id/authentication-tokens) says its expiry when the
// token can be told apart: its stored "token_id", or the user's only token;
// that expiry is then remembered (TokenLifecycle::expiry_learned).
// PROTOCOL.md, `check`.

#include <boost/asio/awaitable.hpp>
#include <chrono>
#include <optional>
#include <string>

#include "daemon/credentials/token_lifecycle.hpp"
#include "daemon/upstream/upstream.hpp"

namespace hostkeeper::daemon::discovery {

struct TokenCheck {
    enum class Result { valid, rejected, accepted, unchecked, no_credentials, failed };
    Result result = Result::failed;
    std::string url;             // the last URL asked ("" when nothing was sent)
    std::optional<long> status;  // its HTTP status, where there was one
    std::string user;            // valid: account/details' data.attributes.username
    std::string message;         // rejected, failed: for the user
    // valid, with no stored expires_at: the expiry the host's token list
    // gives (nullopt: none learned), or why none ("expiry unknown: 3 tokens
    // for this user", "the token never expires").
    std::optional<std::chrono::system_clock::time_point> learned_expiry;
    std::string expiry_note;
};

std::string_view to_string(TokenCheck::Result result) noexcept;

// Throws proto::Error when the credentials cannot be read (keyring_locked,
// ...): then nothing is sent.
boost::asio::awaitable<TokenCheck> check_token(upstream::Upstream& upstream,
                                               credentials::TokenLifecycle& credentials,
                                               std::string host, std::chrono::milliseconds timeout);

}  // namespace hostkeeper::daemon::discovery
