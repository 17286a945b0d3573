#pragma once
// Credentials from `hostkeeper login`: beside "token" and "expires_at", the
// stored object's "login" member keeps what refreshing needs (the refresh
// token, the login.v1 token endpoint and client id, when the token was
// issued). That member is hostkeeper's own: it is never handed to a
// consumer (`served` drops it). A token due for a refresh is refreshed by a
// TokenRefresher (the discovery layer's login service) ahead of its expiry:
// a tenth of its lifetime before it, at most 5 minutes, as tokens from
// commands are (command_tokens.hpp).

#include <boost/asio/awaitable.hpp>
#include <optional>
#include <string>

#include "daemon/credentials/keyring.hpp"
#include "proto/json.hpp"
#include "proto/secret.hpp"

namespace hostkeeper::daemon::credentials {

// The credentials object's member with what refreshing needs.
inline constexpr const char* kLogin = "login";

// What refreshing a stored login needs, read from its "login" member.
struct LoginRecord {
    proto::Secret refresh_token;
    std::string token_url;
    std::string client_id;
    std::optional<WallTime> issued_at;
};

// The stored object's login, or nullopt when it has none (or no refresh
// token: then there is nothing to refresh with).
std::optional<LoginRecord> login_of(const proto::Secret& credentials);

// The credentials object for a new access token: {"token", "expires_at" (when
// `expires` is known), "login": {"refresh_token", "token_url", "client_id",
// "issued_at"} (when `refresh_token` is given)}.
proto::Secret login_credentials(const proto::Secret& access_token, std::optional<WallTime> expires,
                                const LoginRecord* record);

// When a token expiring at `expires`, issued at `issued` (nullopt: unknown,
// the 5 minutes apply), is due for a refresh.
WallTime refresh_due(WallTime expires, std::optional<WallTime> issued);

// `credentials` as handed to consumers: without the "login" member.
proto::Secret served(proto::Secret credentials);

// Refreshes a stored login: the new credentials object (login_credentials),
// or an exception whose message says what failed ("refreshing the token of
// HOST failed: ..."), quoted in the withheld token's message and the logs.
class TokenRefresher {
  public:
    TokenRefresher() = default;
    TokenRefresher(const TokenRefresher&) = delete;
    TokenRefresher& operator=(const TokenRefresher&) = delete;
    virtual ~TokenRefresher() = default;
    virtual boost::asio::awaitable<proto::Secret> refresh(std::string host, LoginRecord record) = 0;
};

}  // namespace hostkeeper::daemon::credentials
