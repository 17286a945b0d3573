#include "daemon/discovery/token_check.hpp"

#include <utility>

#include "daemon/credentials/terraform_items.hpp"
#include "daemon/discovery/account_details.hpp"
#include "daemon/discovery/authentication_tokens.hpp"
#include "daemon/discovery/discovery_document.hpp"
#include "daemon/http/url.hpp"
#include "daemon/upstream/bearer_token.hpp"
#include "proto/secret.hpp"

namespace hostkeeper::daemon::discovery {
namespace asio = boost::asio;
using Result = TokenCheck::Result;

namespace {

constexpr std::size_t kMaxAccountDocument = std::size_t{256} * 1024;

// Whether stored credentials carry a token to send (bearer_token's reading).
bool has_token(const proto::Secret& credentials) {
    const std::optional<proto::Secret> token = credentials::token_of(credentials);
    return token && !token->empty();
}

upstream::UpstreamRequest request_for(const std::string& host, std::string url,
                                      std::chrono::milliseconds timeout, std::size_t max_body) {
    upstream::UpstreamRequest request;
    request.url = std::move(url);
    request.token_host = host;
    request.token_origin = discovery_url(host);
    request.purpose = "checking the token of " + host;
    request.rules.max_body = max_body;
    request.rules.max_redirects = kMaxDiscoveryRedirects;
    request.rules.timeout = timeout;
    request.json_media_type = false;  // judged here: TFE answers application/vnd.api+json
    request.explain_refusal = true;
    request.send_refused = true;  // a check is how a refused token is found valid again
    return request;
}

// The discovery document's request: its answer is no verdict on the token.
upstream::UpstreamRequest discovery_request(const std::string& host,
                                            std::chrono::milliseconds timeout) {
    upstream::UpstreamRequest request =
        request_for(host, discovery_url(host), timeout, kMaxDiscoveryDocument);
    request.judges_token = false;
    return request;
}

// A discovery document refused to the token or absent (401, 403, 404): the
// host serves Terraform nothing the token can be checked against (a host of
// git repositories or container images may refuse it to any token). Nothing
// is judged, and the token stays as it was.
std::optional<TokenCheck> no_terraform_services(const std::string& host,
                                                const upstream::Verdict& verdict) {
    if (!verdict.response || !verdict.token_sent) return std::nullopt;
    const long status = verdict.response->status;
    if (status != 401 && status != 403 && status != 404) return std::nullopt;
    TokenCheck out;
    out.result = Result::unchecked;
    out.url = verdict.response->url;
    out.status = status;
    out.message = host + " serves no Terraform discovery document to its token (HTTP " +
                  std::to_string(status) +
                  "): it offers no Terraform service to check the token with, so the token "
                  "was not judged and is still given out";
    return out;
}

// What a response says of the token, short of the document's content:
// nullopt to go on reading it.
std::optional<TokenCheck> refusal_or_failure(const std::string& host,
                                             const upstream::Verdict& verdict) {
    TokenCheck out;
    if (!verdict.response) {
        out.url = verdict.url_asked;
        out.message = verdict.error;
        return out;
    }
    const http::HttpResponse& response = *verdict.response;
    out.url = response.url;
    out.status = response.status;
    if ((response.status == 401 || response.status == 403) && verdict.token_sent) {
        out.result = Result::rejected;
        out.message = "the token was refused (HTTP " + std::to_string(response.status) + "): " +
                      (response.status == 401 ? "it expired or was revoked"
                                              : "it is not allowed to do this") +
                      "; run terraform login " + host;
        return out;
    }
    if (!verdict.token_sent) {
        out.message = response.url + ": the request went without the token (" +
                      (verdict.error.empty() ? "redirected to another host" : verdict.error) +
                      "): the token is only sent to " + host;
        return out;
    }
    if (response.status != 200) {
        out.message = verdict.error.empty()
                          ? response.url + ": HTTP status " + std::to_string(response.status)
                          : verdict.error;
        return out;
    }
    return std::nullopt;
}

}  // namespace

std::string_view to_string(Result result) noexcept {
    switch (result) {
        case Result::valid:
            return "valid";
        case Result::rejected:
            return "rejected";
        case Result::accepted:
            return "accepted";
        case Result::unchecked:
            return "unchecked";
        case Result::no_credentials:
            return "no_credentials";
        case Result::failed:
            return "failed";
    }
    return "failed";
}

namespace {

// After the discovery document: where to ask "who am I" (the tfe.v2 URL's
// account/details), or the answer already (accepted, failed). A plain
// function: its try blocks must not sit in the coroutine (GCC bug 109224).
struct NextStep {
    std::string details_url;
    std::string tfe_url;
    TokenCheck answer;
};

NextStep after_discovery(const std::string& host, const http::HttpResponse& response) {
    NextStep next;
    TokenCheck& out = next.answer;
    out.url = response.url;
    out.status = response.status;
    Services services;
    try {
        services = parse_discovery_document(response.body, response.url);
    } catch (const std::exception& e) {
        out.message = out.url + ": " + e.what();
        return next;
    }
    const auto tfe = services.services.find("tfe.v2");
    if (tfe == services.services.end() || !tfe->is_string()) {
        out.result = Result::accepted;
        return next;
    }
    std::string details;
    try {
        details = http::resolve_url(tfe->get<std::string>(), "account/details");
    } catch (const std::exception& e) {
        out.message = "tfe.v2 of " + host + ": " + e.what();
        return next;
    }
    if (!http::same_origin(details, discovery_url(host))) {
        out.url = details;
        out.status.reset();
        out.message = "tfe.v2 of " + host + " is at another host (" + details +
                      "): the token is only sent to " + host + ", so it was not checked";
        return next;
    }
    next.details_url = std::move(details);
    next.tfe_url = tfe->get<std::string>();
    return next;
}

// The user's token list's URL (tfe.v2 + users/ID/authentication-tokens), or
// "" with why not in `note`.
std::string token_list_url(const std::string& tfe, const std::string& user, std::string& note) {
    const bool plain = !user.empty() && user.size() <= 128 &&
                       user.find_first_not_of(
                           "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ"
                           "0123456789-_") == std::string::npos;
    if (!plain) {
        note = "expiry unknown: account/details names no user id (data.id)";
        return {};
    }
    try {
        return http::resolve_url(tfe, "users/" + user + "/authentication-tokens");
    } catch (const std::exception& e) {
        note = std::string("expiry unknown: ") + e.what();
        return {};
    }
}

// What the token list says of the stored token's expiry, into `out`.
void read_listed_expiry(std::string_view body, const std::string& token_id, TokenCheck& out) {
    ListedExpiry found;
    try {
        found = expiry_in_list(read_token_list(body), token_id);
    } catch (const std::exception& e) {
        out.expiry_note = std::string("expiry unknown: ") + e.what();
        return;
    }
    if (!found.found) {
        out.expiry_note = "expiry unknown: " + found.why;
    } else if (!found.expires) {
        out.expiry_note = "the token never expires";
    } else {
        out.learned_expiry = found.expires;
    }
}

// The stored token's expiry from the host's token list, remembered when found.
asio::awaitable<void> learn_expiry(upstream::Upstream& upstream,
                                   credentials::TokenLifecycle& credentials, std::string host,
                                   std::string url, std::string token_id,
                                   std::chrono::milliseconds timeout, TokenCheck& out) {
    upstream::UpstreamRequest request =
        request_for(host, std::move(url), timeout, kMaxAccountDocument);
    auto asking = upstream.fetch(std::move(request));  // named first
    const upstream::Verdict listed = co_await std::move(asking);
    if (auto early = refusal_or_failure(host, listed)) {
        out.expiry_note = "expiry unknown: " + early->message;
        co_return;
    }
    read_listed_expiry(listed.response->body, token_id, out);
    if (out.learned_expiry) credentials.expiry_learned(host, *out.learned_expiry);
}

}  // namespace

asio::awaitable<TokenCheck> check_token(upstream::Upstream& upstream,
                                        credentials::TokenLifecycle& credentials, std::string host,
                                        std::chrono::milliseconds timeout) {
    // Each awaited call is named first.
    std::string token_id;  // as stored, when hostkeeper created the token
    bool dated = false;    // the stored object has an expires_at
    {
        // Throws when the keyring cannot say: nothing is sent then.
        auto reading = credentials.get(host);
        const std::optional<proto::Secret> stored = co_await std::move(reading);
        if (!stored || !has_token(*stored)) {
            TokenCheck none;
            none.result = Result::no_credentials;
            co_return none;
        }
        token_id = stored_token_id(*stored);
        dated = stored_expiry(*stored).has_value();
    }
    if (auto withheld = credentials.withheld(host);
        withheld && withheld->reason == credentials::Withheld::Reason::expired) {
        // Past its expires_at it is not sent, not even to ask.
        TokenCheck expired;
        expired.result = Result::rejected;
        expired.message = std::move(withheld->message);
        co_return expired;
    }
    upstream::UpstreamRequest discovery = discovery_request(host, timeout);
    auto asking = upstream.fetch(std::move(discovery));
    const upstream::Verdict discovered = co_await std::move(asking);
    if (auto unjudged = no_terraform_services(host, discovered)) co_return std::move(*unjudged);
    if (auto early = refusal_or_failure(host, discovered)) co_return std::move(*early);
    NextStep next = after_discovery(host, *discovered.response);
    if (next.details_url.empty()) co_return std::move(next.answer);

    upstream::UpstreamRequest who =
        request_for(host, next.details_url, timeout, kMaxAccountDocument);
    auto answering = upstream.fetch(std::move(who));
    const upstream::Verdict account = co_await std::move(answering);
    if (auto early = refusal_or_failure(host, account)) co_return std::move(*early);
    TokenCheck out;
    out.url = account.response->url;
    out.status = account.response->status;
    out.user = account_username(account.response->body);
    if (out.user.empty()) {
        out.message = out.url + ": the answer names no user (data.attributes.username)";
        co_return out;
    }
    out.result = Result::valid;
    credentials.token_accepted(host);
    if (dated) co_return out;
    std::string list_url =
        token_list_url(next.tfe_url, account_user_id(account.response->body), out.expiry_note);
    if (list_url.empty()) co_return out;
    auto learning = learn_expiry(upstream, credentials, host, std::move(list_url),
                                 std::move(token_id), timeout, out);
    co_await std::move(learning);
    co_return out;
}

}  // namespace hostkeeper::daemon::discovery
