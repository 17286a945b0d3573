#include "daemon/discovery/login_service.hpp"

#include <spdlog/spdlog.h>

#include <algorithm>
#include <utility>

#include "daemon/credentials/token_expiry.hpp"
#include "daemon/discovery/discovery_service.hpp"
#include "daemon/discovery/login_pkce.hpp"
#include "daemon/discovery/login_token.hpp"
#include "daemon/http/http_fetch.hpp"
#include "daemon/http/url.hpp"
#include "proto/error.hpp"

namespace hostkeeper::daemon::discovery {
namespace asio = boost::asio;
using proto::Error;
using proto::ErrorCode;
using proto::Json;
using proto::Secret;

namespace {

// How long a started login waits for its redirect, and how many may wait.
constexpr std::chrono::minutes kPendingLifetime{15};
constexpr std::size_t kMaxPending = 16;

const std::string& login_string(const std::string& host, const Json& login, const char* name) {
    const auto found = login.find(name);
    if (found == login.end() || !found->is_string() || found->get_ref<const std::string&>().empty())
        throw Error(ErrorCode::unsupported_service,
                    host + "'s login.v1 has no \"" + name + "\": it cannot be logged in to");
    return found->get_ref<const std::string&>();
}

// The tokens of a token endpoint's answer, or the proto::Error login_failed it means.
LoginTokens tokens_of(const std::string& doing, const std::string& url,
                      std::optional<http::HttpResponse>& response, const std::string& error) {
    const std::string what = doing + " failed: " + url + ": ";
    if (!response) throw Error(ErrorCode::login_failed, what + error);
    const proto::ScrubGuard guard(response->body);
    if (response->status != 200) {
        std::string message = what + "HTTP status " + std::to_string(response->status);
        if (const std::string said = token_error(response->body); !said.empty())
            message += ": " + said;
        throw Error(ErrorCode::login_failed, message);
    }
    try {
        return parse_token_response(response->body);
    } catch (const TokenResponseError& e) {
        throw Error(ErrorCode::login_failed, what + e.what());
    }
}

// POSTs the form to the token endpoint. Throws proto::Error login_failed.
asio::awaitable<LoginTokens> post_tokens(http::HttpClient& http, std::string url, std::string form,
                                         std::chrono::milliseconds timeout, std::string doing) {
    http::HttpRequest request;
    request.method = "POST";
    request.url = url;
    request.body = std::move(form);
    request.content_type = "application/x-www-form-urlencoded";
    request.media_type = "application/json";
    request.timeout = timeout;
    request.max_body = kMaxTokenResponse;
    auto sending = http::fetch_once(http, std::move(request));  // named first
    http::FetchResult exchange = co_await std::move(sending);
    co_return tokens_of(doing, url, exchange.response, exchange.error);
}

// The credentials object for `tokens` got at `now`; the refresh token
// `previous` is kept when the server did not send a new one.
Secret credentials_of(const LoginTokens& tokens, const std::string& token_url,
                      const std::string& client, const Secret* previous,
                      std::optional<credentials::WallTime>& expires) {
    const credentials::WallTime now = std::chrono::system_clock::now();
    if (tokens.expires_in) expires = now + *tokens.expires_in;
    const Secret* refresh = tokens.refresh_token ? &*tokens.refresh_token : previous;
    if (refresh == nullptr)
        return credentials::login_credentials(tokens.access_token, expires, nullptr);
    const credentials::LoginRecord record{refresh->clone(), token_url, client, now};
    return credentials::login_credentials(tokens.access_token, expires, &record);
}

}  // namespace

LoginEndpoints login_endpoints(const std::string& host, const Json& login) {
    if (!login.is_object())
        throw Error(ErrorCode::unsupported_service, host + " offers no login.v1 service");
    LoginEndpoints out;
    out.authz = login_string(host, login, "authz");
    out.token = login_string(host, login, "token");
    out.client = login_string(host, login, "client");
    if (const auto grants = login.find("grant_types"); grants != login.end()) {
        if (!grants->is_array() ||
            std::find(grants->begin(), grants->end(), Json("authz_code")) == grants->end())
            throw Error(ErrorCode::unsupported_service,
                        host + "'s login.v1 does not offer the authz_code grant");
    }
    if (const auto ports = login.find("ports"); ports != login.end()) {
        const bool pair = ports->is_array() && ports->size() == 2 &&
                          (*ports)[0].is_number_integer() && (*ports)[1].is_number_integer();
        out.first_port = pair ? (*ports)[0].get<int>() : 0;
        out.last_port = pair ? (*ports)[1].get<int>() : 0;
        if (!pair || out.first_port < 1024 || out.first_port > out.last_port ||
            out.last_port > 65535)
            throw Error(ErrorCode::unsupported_service,
                        host + "'s login.v1 \"ports\" is not a range within 1024-65535");
    }
    return out;
}

LoginService::LoginService(http::HttpClient& http, credentials::TokenLifecycle& credentials,
                           DiscoveryService& discovery, std::chrono::milliseconds timeout,
                           Clock clock)
    : http_(http),
      credentials_(credentials),
      discovery_(discovery),
      timeout_(timeout),
      clock_(std::move(clock)) {}

asio::awaitable<LoginStart> LoginService::start(std::string host, int port) {
    auto discovering = discovery_.discover(host, false);  // named first
    const DiscoveryAnswer answer = co_await std::move(discovering);
    const Json& services = answer.services().services;
    const auto login = services.find("login.v1");
    if (login == services.end()) {
        const auto invalid = answer.services().invalid.find("login.v1");
        throw Error(ErrorCode::unsupported_service,
                    host + " offers no login.v1 service" +
                        (invalid != answer.services().invalid.end() && invalid->is_string()
                             ? ": " + invalid->get<std::string>()
                             : std::string()));
    }
    const LoginEndpoints endpoints = login_endpoints(host, *login);
    if (port < endpoints.first_port || port > endpoints.last_port)
        throw Error(ErrorCode::bad_request, "port " + std::to_string(port) + " is outside " + host +
                                                "'s login.v1 ports (" +
                                                std::to_string(endpoints.first_port) + "-" +
                                                std::to_string(endpoints.last_port) + ")");
    purge();
    Pending pending{host,
                    Secret(random_urlsafe()),
                    "http://localhost:" + std::to_string(port) + "/login",
                    endpoints.token,
                    endpoints.client,
                    clock_()};
    LoginStart out;
    out.state = random_urlsafe();
    out.url = http::with_query(endpoints.authz,
                               {{"client_id", endpoints.client},
                                {"code_challenge", pkce_challenge(pending.verifier.view())},
                                {"code_challenge_method", "S256"},
                                {"redirect_uri", pending.redirect_uri},
                                {"response_type", "code"},
                                {"state", out.state}});
    pending_.emplace(out.state, std::move(pending));
    spdlog::info("login {}: started", host);
    co_return out;
}

void LoginService::purge() {
    const auto now = clock_();
    std::erase_if(pending_, [now](const auto& entry) {
        return now - entry.second.started > kPendingLifetime;
    });
    while (pending_.size() >= kMaxPending) {
        const auto oldest = std::min_element(
            pending_.begin(), pending_.end(),
            [](const auto& a, const auto& b) { return a.second.started < b.second.started; });
        pending_.erase(oldest);
    }
}

asio::awaitable<LoginDone> LoginService::exchange(std::string host, std::string state,
                                                  Secret code) {
    purge();
    const auto found = pending_.find(state);
    if (found == pending_.end() || found->second.host != host)
        throw Error(ErrorCode::login_failed, "no login of " + host +
                                                 " waits for this answer (a wrong or old state): "
                                                 "run hostkeeper login " +
                                                 host + " again");
    const Pending pending = std::move(found->second);
    pending_.erase(found);
    std::string form = http::form_body({{"grant_type", "authorization_code"},
                                        {"code", std::string(code.view())},
                                        {"client_id", pending.client},
                                        {"redirect_uri", pending.redirect_uri},
                                        {"code_verifier", std::string(pending.verifier.view())}});
    auto asking = post_tokens(http_, pending.token_url, std::move(form), timeout_,
                              "exchanging the authorization code");  // named first
    const LoginTokens tokens = co_await std::move(asking);
    std::optional<credentials::WallTime> expires;
    Secret stored = credentials_of(tokens, pending.token_url, pending.client, nullptr, expires);
    auto storing = credentials_.store(host, std::move(stored));  // named first
    co_await std::move(storing);
    spdlog::info("login {}: token stored{}", host, tokens.refresh_token ? ", refreshable" : "");
    LoginDone done;
    if (expires) done.expires_at = credentials::rfc3339_text(*expires);
    done.refreshable = tokens.refresh_token.has_value();
    co_return done;
}

asio::awaitable<Secret> LoginService::refresh(std::string host, credentials::LoginRecord record) {
    std::string form = http::form_body({{"grant_type", "refresh_token"},
                                        {"refresh_token", std::string(record.refresh_token.view())},
                                        {"client_id", record.client_id}});
    auto asking = post_tokens(http_, record.token_url, std::move(form), timeout_,
                              "refreshing the token of " + host);  // named first
    const LoginTokens tokens = co_await std::move(asking);
    std::optional<credentials::WallTime> expires;
    co_return credentials_of(tokens, record.token_url, record.client_id, &record.refresh_token,
                             expires);
}

}  // namespace hostkeeper::daemon::discovery
