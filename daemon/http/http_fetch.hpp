#pragma once
// One GET as Terraform's clients make it, redirects followed here rather
// than by libcurl so that the bearer token goes to its own origin only and
// never along a redirect elsewhere. Shared by discovery and the registry
// clients.

#include <boost/asio/awaitable.hpp>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <utility>

#include "daemon/http/http_client.hpp"
#include "proto/secret.hpp"

namespace hostkeeper::daemon::http {

struct FetchRules {
    std::size_t max_body = std::size_t{1024} * 1024;
    int max_redirects = 3;
    std::chrono::milliseconds timeout{11000};  // the whole exchange, redirects included
    int body_fd = -1;                          // see HttpRequest::body_fd
    BodyObserver on_body;                      // see HttpRequest::on_body
};

// The last response (never a redirect), or why there is none:
// fetch_following says "URL: why", fetch_once the client's message alone.
struct FetchResult {
    std::optional<HttpResponse> response;
    std::string error;
    int write_errno = 0;         // HttpError::write_errno of the failure: the body_fd write's errno
    std::uint64_t requests = 0;  // sent upstream, redirects included
};

bool is_redirect(long status) noexcept;
// A 4xx that asking again will not change (not 408 or 429): the server
// refused the request, so a cached answer must not stand in for it.
bool is_refusal(long status) noexcept;

// What a fetch did with the stored token of the host whose request it was.
enum class TokenUse {
    sent,        // it went with the final request
    withheld,    // the final request was to another origin: it goes to its own only
    none,        // none is stored
    unreadable,  // the keyring could not say (locked, absent): the request went without
};

// What a fetch that ended at `final_url` did with the token: `has_token`
// whether it had one; `keyring_problem` why the keyring could not say ("":
// it could); the token goes to `token_origin` only.
TokenUse token_use(bool has_token, const std::string& keyring_problem, const std::string& final_url,
                   const std::string& token_origin);

// What a 401 or 403 adds to its message, as far as the credentials go:
// " with the credentials stored for HOST", or "; " and why none were sent.
std::string refusal_reason(TokenUse use, const std::string& token_host,
                           const std::string& token_origin, const std::string& keyring_problem);

// `request` sent as it is (a redirect is answered, not followed): its
// response, or why there is none. Never throws for what the server or the
// network does.
boost::asio::awaitable<FetchResult> fetch_once(HttpClient& http, HttpRequest request);

// GET `url`. `token` is sent to URLs of `token_origin`'s origin (scheme,
// host and port) and to no other.
boost::asio::awaitable<FetchResult> fetch_following(HttpClient& http, std::string url,
                                                    const std::optional<proto::Secret>& token,
                                                    const std::string& token_origin,
                                                    const FetchRules& rules);

}  // namespace hostkeeper::daemon::http
