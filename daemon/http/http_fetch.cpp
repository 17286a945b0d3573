#include "daemon/http/http_fetch.hpp"

#include <set>

#include "daemon/http/url.hpp"

namespace hostkeeper::daemon::http {
namespace asio = boost::asio;
using steady = std::chrono::steady_clock;

bool is_redirect(long status) noexcept {
    return status == 301 || status == 302 || status == 303 || status == 307 || status == 308;
}

bool is_refusal(long status) noexcept {
    return status >= 400 && status < 500 && status != 408 && status != 429;
}

TokenUse token_use(bool has_token, const std::string& keyring_problem, const std::string& final_url,
                   const std::string& token_origin) {
    if (has_token)
        return same_origin(final_url, token_origin) ? TokenUse::sent : TokenUse::withheld;
    return keyring_problem.empty() ? TokenUse::none : TokenUse::unreadable;
}

std::string refusal_reason(TokenUse use, const std::string& token_host,
                           const std::string& token_origin, const std::string& keyring_problem) {
    switch (use) {
        case TokenUse::sent:
            return " with the credentials stored for " + token_host;
        case TokenUse::withheld:
            return "; the credentials stored for " + token_host + " go to " + token_origin +
                   " only, never to another host";
        case TokenUse::none:
            return "; no credentials are stored for " + token_host +
                   " (store them with 'terraform login " + token_host + "')";
        case TokenUse::unreadable:
            return "; the credentials stored for " + token_host +
                   " could not be read from the keyring, so none were sent: " + keyring_problem;
    }
    return "";
}

asio::awaitable<FetchResult> fetch_once(HttpClient& http, HttpRequest request) {
    FetchResult out;
    out.requests = 1;
    try {
        auto sending = http.fetch(std::move(request));  // named first
        out.response = co_await std::move(sending);
    } catch (const HttpError& e) {
        out.error = e.what();
        out.write_errno = e.write_errno();
    }
    co_return out;
}

asio::awaitable<FetchResult> fetch_following(HttpClient& http, std::string url,
                                             const std::optional<proto::Secret>& token,
                                             const std::string& token_origin,
                                             const FetchRules& rules) {
    FetchResult out;
    const steady::time_point deadline = steady::now() + rules.timeout;
    std::set<std::string> seen{url};
    for (int redirects = 0;; ++redirects) {
        HttpRequest request;
        request.url = url;
        request.max_body = rules.max_body;
        request.body_fd = rules.body_fd;
        request.on_body = rules.on_body;
        request.timeout =
            std::chrono::duration_cast<std::chrono::milliseconds>(deadline - steady::now());
        if (request.timeout.count() <= 0) {
            out.error =
                url + ": timed out after " +
                std::to_string(
                    std::chrono::duration_cast<std::chrono::seconds>(rules.timeout).count()) +
                " s";
            co_return out;
        }
        if (token && same_origin(url, token_origin)) request.bearer_token = token->clone();
        ++out.requests;
        auto sending = fetch_once(http, std::move(request));  // named first
        FetchResult once = co_await std::move(sending);
        out.response = std::move(once.response);
        out.write_errno = once.write_errno;
        if (!once.error.empty()) {
            out.error = url;
            out.error.append(": ").append(once.error);
            co_return out;
        }
        const HttpResponse& response = *out.response;
        if (!is_redirect(response.status)) co_return out;
        const std::string at = response.url + ": ";
        if (response.location.empty()) {
            out.error = at + "HTTP status " + std::to_string(response.status) +
                        " redirect without a Location";
        } else if (redirects == rules.max_redirects) {
            out.error = at + "more than " + std::to_string(rules.max_redirects) +
                        " redirects (the next to " + response.location + ")";
        } else if (!seen.insert(response.location).second) {
            out.error = at + "redirect loop: redirected back to " + response.location;
        } else {
            url = response.location;
            continue;
        }
        out.response.reset();
        co_return out;
    }
}

}  // namespace hostkeeper::daemon::http
