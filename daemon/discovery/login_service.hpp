#pragma once
// hostkeeper's own client of the login.v1 protocol (OAuth 2.0 authorization
// code grant with PKCE, as Terraform's `terraform login`): `start` makes the
// authorization URL for a loopback redirect (the PKCE verifier and the state
// stay in the daemon), `exchange` trades the code the redirect brought for
// tokens at the login.v1 "token" endpoint and stores them (the access token
// never reaches the command line), and `refresh` (credentials::
// TokenRefresher) uses the refresh-token grant. PROTOCOL.md, `login_start`.

#include <boost/asio/awaitable.hpp>
#include <chrono>
#include <functional>
#include <map>
#include <optional>
#include <string>

#include "daemon/credentials/login_credentials.hpp"
#include "daemon/credentials/token_lifecycle.hpp"
#include "daemon/http/http_client.hpp"
#include "proto/json.hpp"
#include "proto/secret.hpp"

namespace hostkeeper::daemon::discovery {

class DiscoveryService;

struct LoginStart {
    std::string url;    // to open in a browser
    std::string state;  // the redirect must bring it back
};

struct LoginDone {
    std::optional<std::string> expires_at;  // RFC 3339, when the server gave expires_in
    bool refreshable = false;               // the server gave a refresh token
};

// A host's login.v1 service as its discovery document describes it.
struct LoginEndpoints {
    std::string authz;
    std::string token;
    std::string client;
    int first_port = 1024;
    int last_port = 65535;
};

// The login.v1 object of a discovery answer. Throws proto::Error
// unsupported_service naming what is missing or wrong.
LoginEndpoints login_endpoints(const std::string& host, const proto::Json& login);

class LoginService final : public credentials::TokenRefresher {
  public:
    using Clock = std::function<std::chrono::steady_clock::time_point()>;

    LoginService(http::HttpClient& http, credentials::TokenLifecycle& credentials,
                 DiscoveryService& discovery, std::chrono::milliseconds timeout,
                 Clock clock = std::chrono::steady_clock::now);

    // The authorization URL for a redirect to http://localhost:PORT/login.
    // Throws proto::Error: discovery_failed, unsupported_service (no usable
    // login.v1), bad_request (a port outside login.v1 "ports").
    boost::asio::awaitable<LoginStart> start(std::string host, int port);
    // Trades `code` for tokens and stores them. Throws proto::Error
    // login_failed (no login waits for `state`, the server refused, its
    // answer is unusable).
    boost::asio::awaitable<LoginDone> exchange(std::string host, std::string state,
                                               proto::Secret code);
    boost::asio::awaitable<proto::Secret> refresh(std::string host,
                                                  credentials::LoginRecord record) override;

  private:
    struct Pending {
        std::string host;
        proto::Secret verifier;
        std::string redirect_uri;
        std::string token_url;
        std::string client;
        std::chrono::steady_clock::time_point started;
    };
    void purge();

    http::HttpClient& http_;
    credentials::TokenLifecycle& credentials_;
    DiscoveryService& discovery_;
    std::chrono::milliseconds timeout_;
    Clock clock_;
    std::map<std::string, Pending> pending_;  // state -> the login waiting for it
};

}  // namespace hostkeeper::daemon::discovery
