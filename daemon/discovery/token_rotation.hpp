#pragma once
// Rotation of an HCP Terraform or Terraform Enterprise user token, through
// the host's documented authentication-token API (tfe.v2, JSON:API): with
// the stored token, find the user (account/details), create a new token
// with an expiry, store it, verify it (account/details with the new token),
// then revoke the previous token when hostkeeper created it (its "token_id").
// All or nothing: a failure before the new token is verified leaves the old
// credentials stored. Tokens only ever go to their own host, never along a
// redirect. PROTOCOL.md, `rotate`.

#include <boost/asio/awaitable.hpp>
#include <chrono>
#include <optional>
#include <string>
#include <string_view>

#include "daemon/credentials/token_lifecycle.hpp"
#include "daemon/http/http_client.hpp"

namespace hostkeeper::daemon::discovery {

struct RotationOptions {
    std::chrono::seconds lifetime{std::chrono::hours(24 * 30)};  // of the new token
    std::chrono::milliseconds timeout{11000};                    // each request
    std::string machine;  // named in the new token's description
};

struct TokenRotation {
    // The step that failed: nothing was changed before `store`; after it,
    // the old credentials were put back. `service`: the host offers no tfe.v2.
    enum class Step { none, credentials, discovery, service, account, create, store, verify };
    Step failed = Step::none;    // none: rotated
    std::string url;             // the request that failed ("" when none)
    std::optional<long> status;  // its HTTP status, where there was one
    std::string message;         // failed: why, for the user
    std::string token_id;        // rotated: the new token's id
    std::string expires_at;      // rotated: the new token's expiry (RFC 3339)
    std::string revoked;         // the previous token's id, revoked
    std::string warning;         // rotated, but something went wrong after (a failed revoke)
    bool rotated() const { return failed == Step::none; }
};

std::string_view to_string(TokenRotation::Step step) noexcept;

// `tfe_url`: the host's tfe.v2 service URL (absolute). Throws proto::Error
// when the credentials cannot be read (keyring_locked, ...): then nothing
// is sent.
boost::asio::awaitable<TokenRotation> rotate_token(http::HttpClient& http,
                                                   credentials::TokenLifecycle& credentials,
                                                   std::string host, std::string tfe_url,
                                                   RotationOptions options);

}  // namespace hostkeeper::daemon::discovery
