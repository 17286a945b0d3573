#pragma once
// Is a host's stored token still good? Asked of the host itself, past every
// cache: its discovery document with the token, then, where it offers
// tfe.v2, HCP Terraform's and Terraform Enterprise's "who am I"
// (tfe.v2 + account/details). The token only ever goes to its own host.
// PROTOCOL.md, `check`.

#include <boost/asio/awaitable.hpp>
#include <chrono>
#include <optional>
#include <string>

#include "daemon/credentials/credential_service.hpp"
#include "daemon/upstream/upstream.hpp"

namespace hostkeeper::daemon::discovery {

struct TokenCheck {
    enum class Result { valid, rejected, accepted, no_credentials, failed };
    Result result = Result::failed;
    std::string url;             // the last URL asked ("" when nothing was sent)
    std::optional<long> status;  // its HTTP status, where there was one
    std::string user;            // valid: account/details' data.attributes.username
    std::string message;         // rejected, failed: for the user
};

std::string_view to_string(TokenCheck::Result result) noexcept;

// Throws proto::Error when the credentials cannot be read (keyring_locked,
// ...): then nothing is sent.
boost::asio::awaitable<TokenCheck> check_token(upstream::Upstream& upstream,
                                               credentials::CredentialService& credentials,
                                               std::string host, std::chrono::milliseconds timeout);

// account/details' username, or "" when the body does not say (pure).
std::string account_username(std::string_view body);

}  // namespace hostkeeper::daemon::discovery
