#include "daemon/discovery/token_rotation.hpp"

#include <unistd.h>

#include <array>
#include <exception>
#include <utility>

#include "daemon/credentials/terraform_items.hpp"
#include "daemon/credentials/token_expiry.hpp"
#include "daemon/discovery/account_details.hpp"
#include "daemon/discovery/authentication_tokens.hpp"
#include "daemon/discovery/discovery_document.hpp"
#include "daemon/http/http_fetch.hpp"
#include "daemon/http/url.hpp"
#include "proto/secret.hpp"

namespace hostkeeper::daemon::discovery {
namespace asio = boost::asio;
using Step = TokenRotation::Step;

std::string_view to_string(Step step) noexcept {
    switch (step) {
        case Step::none:
            return "none";
        case Step::credentials:
            return "credentials";
        case Step::discovery:
            return "discovery";
        case Step::service:
            return "service";
        case Step::account:
            return "account";
        case Step::create:
            return "create";
        case Step::store:
            return "store";
        case Step::verify:
            return "verify";
    }
    return "none";
}

namespace {

constexpr std::size_t kMaxApiDocument = std::size_t{256} * 1024;

// One request's outcome: the response, or why there is none.
struct Exchange {
    std::string url;
    std::optional<http::HttpResponse> response;
    std::string error;
};

http::HttpRequest api_request(std::string method, std::string url, const proto::Secret& token,
                              std::chrono::milliseconds timeout) {
    http::HttpRequest request;
    request.method = std::move(method);
    request.url = std::move(url);
    request.bearer_token = token.clone();
    request.timeout = timeout;
    request.max_body = kMaxApiDocument;
    request.media_type = std::string(kJsonApiMediaType);
    return request;
}

// Sent as is: a redirect is not followed, so the token goes to this URL only.
asio::awaitable<Exchange> send(http::HttpClient& http, http::HttpRequest request) {
    std::string url = request.url;
    auto sending = http::fetch_once(http, std::move(request));  // named first
    http::FetchResult got = co_await std::move(sending);
    co_return Exchange{std::move(url), std::move(got.response), std::move(got.error)};
}

// Whether `exchange` failed (no response, or a status other than `expected`);
// then `out` says so for `step`.
bool failed_step(TokenRotation& out, Step step, const std::string& doing, const Exchange& exchange,
                 long expected) {
    if (exchange.response && exchange.response->status == expected) return false;
    out.failed = step;
    out.url = exchange.url;
    out.message = doing + " failed: " + exchange.url + ": ";
    if (!exchange.response) {
        out.message += exchange.error;
        return true;
    }
    const http::HttpResponse& response = *exchange.response;
    out.status = response.status;
    out.message += "HTTP status " + std::to_string(response.status);
    if (http::is_redirect(response.status)) out.message += " (a redirect, not followed)";
    if (const std::string detail = json_api_error(response.body); !detail.empty())
        out.message += ": " + detail;
    return true;
}

// Stores `credentials` for `host`: "" when done, else why not.
asio::awaitable<std::string> try_store(credentials::TokenLifecycle& credentials, std::string host,
                                       proto::Secret secret) {
    std::string problem;
    try {
        auto storing = credentials.store(std::move(host), std::move(secret));  // named first
        co_await std::move(storing);
    } catch (const std::exception& e) {
        problem = e.what();
    }
    co_return problem;
}

// The API's URLs for `host`, or a failure in `out` (another origin, not a URL).
struct ApiUrls {
    std::string base;  // tfe.v2, ending in "/"
    std::string account;
};

bool api_urls(const std::string& host, const std::string& tfe_url, ApiUrls& urls,
              TokenRotation& out) {
    out.failed = Step::discovery;
    out.url = tfe_url;
    try {
        urls.base = tfe_url.ends_with('/') ? tfe_url : tfe_url + "/";
        urls.account = http::resolve_url(urls.base, "account/details");
    } catch (const std::exception& e) {
        out.message = "tfe.v2 of " + host + ": " + e.what();
        return false;
    }
    if (!http::same_origin(urls.base, discovery_url(host))) {
        out.message = "tfe.v2 of " + host + " is at another host (" + tfe_url +
                      "): the token is only sent to " + host + ", so it was not rotated";
        return false;
    }
    out.failed = Step::none;
    out.url.clear();
    return true;
}

// An id fit for a URL path segment ("user-...", "at-..."): letters, digits, '-', '_'.
bool plain_id(const std::string& id) {
    if (id.empty() || id.size() > 128) return false;
    for (const char c : id) {
        const bool ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
                        (c >= '0' && c <= '9') || c == '-' || c == '_';
        if (!ok) return false;
    }
    return true;
}

std::string description(const std::string& machine) {
    std::string name = machine;
    if (name.empty()) {
        std::array<char, 256> buffer{};
        if (::gethostname(buffer.data(), buffer.size() - 1) == 0) name = buffer.data();
    }
    return "hostkeeper on " + (name.empty() ? std::string("this machine") : name);
}

// The created token of a 201's body, or a failure in `out`.
std::optional<CreatedToken> created_token(const Exchange& made, TokenRotation& out) {
    try {
        return read_created_token(made.response->body);
    } catch (const std::exception& e) {
        out.failed = Step::create;
        out.url = made.url;
        out.status = made.response->status;
        out.message = "creating a new token failed: " + made.url + ": " + e.what();
        return std::nullopt;
    }
}

// What a rotation works with once the user is known.
struct Rotation {
    std::string host;
    ApiUrls urls;
    std::string user;
    proto::Secret old_credentials;
    proto::Secret old_token;
    RotationOptions options;
    credentials::TokenLifecycle* credentials = nullptr;
    proto::Secret new_token;  // once verified
};

// DELETE authentication-tokens/ID with `token`: "" when done, else why not.
asio::awaitable<std::string> revoke(http::HttpClient& http, const Rotation& r, std::string id,
                                    const proto::Secret& token) {
    http::HttpRequest request = api_request("DELETE", r.urls.base + "authentication-tokens/" + id,
                                            token, r.options.timeout);
    auto deleting = send(http, std::move(request));  // named first
    const Exchange deleted = co_await std::move(deleting);
    TokenRotation failure;
    if (!failed_step(failure, Step::none, "revoking token " + id, deleted, 204)) co_return "";
    co_return failure.message;
}

// The new token stored, its verification (account/details names the same
// user); on a failure, the old credentials back and the new token revoked.
asio::awaitable<void> store_and_verify(http::HttpClient& http, Rotation& r,
                                       const CreatedToken& created, TokenRotation& out) {
    proto::Secret fresh = rotated_credentials(r.old_credentials, created, created.expired_at);
    auto storing = try_store(*r.credentials, r.host, std::move(fresh));  // named first
    const std::string stored = co_await std::move(storing);
    if (!stored.empty()) {
        out.failed = Step::store;
        out.message = "storing the new token failed: " + stored;
    } else {
        http::HttpRequest asking =
            api_request("GET", r.urls.account, created.token, r.options.timeout);
        auto verifying = send(http, std::move(asking));  // named first
        const Exchange verified = co_await std::move(verifying);
        if (!failed_step(out, Step::verify, "verifying the new token", verified, 200) &&
            account_user_id(verified.response->body) != r.user) {
            out.failed = Step::verify;
            out.url = verified.url;
            out.status = verified.response->status;
            out.message = "verifying the new token failed: " + verified.url +
                          ": the answer names another user than " + r.user;
        }
        if (out.rotated()) {
            r.new_token = created.token.clone();
            out.token_id = created.id;
            out.expires_at = created.expired_at;
            co_return;
        }
        proto::Secret previous = r.old_credentials.clone();
        auto restoring = try_store(*r.credentials, r.host, std::move(previous));  // named first
        const std::string restored = co_await std::move(restoring);
        out.message += restored.empty()
                           ? "; the previous credentials are stored again"
                           : "; putting the previous credentials back failed: " + restored;
    }
    auto deleting = revoke(http, r, created.id, r.old_token);  // named first
    const std::string deleted = co_await std::move(deleting);
    out.message += deleted.empty() ? "; the new token was revoked" : "; " + deleted;
}

// Asks account/details with the stored token: the user's id into `r.user`,
// or a failure in `out`.
asio::awaitable<void> find_user(http::HttpClient& http, Rotation& r, TokenRotation& out) {
    http::HttpRequest asking = api_request("GET", r.urls.account, r.old_token, r.options.timeout);
    auto who = send(http, std::move(asking));  // named first
    const Exchange account = co_await std::move(who);
    if (failed_step(out, Step::account, "asking whose the stored token is", account, 200)) {
        if (out.status == 401) {
            r.credentials->token_rejected(r.host, account.url, 401);
            out.message += "; the stored token was refused: run terraform login " + r.host;
        }
        co_return;
    }
    r.user = account_user_id(account.response->body);
    if (!plain_id(r.user)) {
        out.failed = Step::account;
        out.url = account.url;
        out.message = account.url + ": the answer names no user id (data.id)";
    }
}

// Creates the new token with the stored one: nullopt and a failure in `out` when it could not.
asio::awaitable<std::optional<CreatedToken>> create(http::HttpClient& http, const Rotation& r,
                                                    TokenRotation& out) {
    const auto expires = std::chrono::system_clock::now() + r.options.lifetime;
    http::HttpRequest request =
        api_request("POST", r.urls.base + "users/" + r.user + "/authentication-tokens", r.old_token,
                    r.options.timeout);
    request.body = token_request_body(description(r.options.machine), expires);
    auto creating = send(http, std::move(request));  // named first
    const Exchange made = co_await std::move(creating);
    if (failed_step(out, Step::create, "creating a new token", made, 201)) co_return std::nullopt;
    std::optional<CreatedToken> created = created_token(made, out);
    if (created && created->expired_at.empty())
        created->expired_at = credentials::rfc3339_text(expires);
    co_return created;
}

// The old token revoked with the new one, when hostkeeper made it (`previous`: its id).
asio::awaitable<void> revoke_previous(http::HttpClient& http, const Rotation& r,
                                      std::string previous, TokenRotation& out) {
    auto revoking = revoke(http, r, previous, r.new_token);  // named first
    const std::string revoked = co_await std::move(revoking);
    if (revoked.empty()) {
        out.revoked = std::move(previous);
    } else {
        out.warning = revoked + "; the new token is stored";
    }
}

// The stored credentials and their token into `r`, or a failure in `out`.
asio::awaitable<void> load(Rotation& r, TokenRotation& out) {
    auto reading = r.credentials->get(r.host);  // named first
    std::optional<proto::Secret> old = co_await std::move(reading);
    if (old) {
        if (std::optional<proto::Secret> token = credentials::token_of(*old)) {
            r.old_token = std::move(*token);
        }
        r.old_credentials = std::move(*old);
    }
    if (r.old_token.empty()) {
        out.failed = Step::credentials;
        out.message = "no token is stored for " + r.host + ": run terraform login " + r.host;
    }
}

}  // namespace

asio::awaitable<TokenRotation> rotate_token(http::HttpClient& http,
                                            credentials::TokenLifecycle& credentials,
                                            std::string host, std::string tfe_url,
                                            RotationOptions options) {
    TokenRotation out;
    Rotation r;
    r.host = host;
    r.options = std::move(options);
    r.credentials = &credentials;
    auto loading = load(r, out);  // named first; throws when the keyring cannot say
    co_await std::move(loading);
    if (!out.rotated()) co_return out;
    if (!api_urls(host, tfe_url, r.urls, out)) co_return out;
    auto finding = find_user(http, r, out);  // named first
    co_await std::move(finding);
    if (!out.rotated()) co_return out;
    auto creating = create(http, r, out);  // named first
    std::optional<CreatedToken> created = co_await std::move(creating);
    if (!created) co_return out;
    const std::string previous = stored_token_id(r.old_credentials);
    auto storing = store_and_verify(http, r, *created, out);  // named first
    co_await std::move(storing);
    if (!out.rotated() || previous.empty() || previous == out.token_id) co_return out;
    auto revoking = revoke_previous(http, r, previous, out);  // named first
    co_await std::move(revoking);
    co_return out;
}

}  // namespace hostkeeper::daemon::discovery
