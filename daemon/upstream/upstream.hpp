#pragma once
// One document fetched from upstream as Terraform's clients fetch it, for
// discovery and the registry clients alike: the token of the host's stored
// credentials, the GET with its redirects (http_fetch), then what the final
// response means (status, media type, the locked-keyring rule) and how long
// it stays fresh. The result is what an AnswerCache keeps.

#include <boost/asio/awaitable.hpp>
#include <chrono>
#include <cstdint>
#include <exception>
#include <memory>
#include <optional>
#include <string>
#include <utility>

#include "daemon/cache/answer_cache.hpp"
#include "daemon/credentials/token_lifecycle.hpp"
#include "daemon/http/cache_control.hpp"
#include "daemon/http/http_client.hpp"
#include "daemon/http/http_fetch.hpp"

namespace hostkeeper::daemon::upstream {

// The cache settings discovery and the registry clients both have (their
// options structs spell them alike).
template <typename Options>
cache::AnswerCacheOptions answer_cache_options(const Options& options) {
    return {options.error_ttl, options.max_retry_after, options.stale_if_error,
            options.max_entries};
}

// An answer cache's counters with the upstream requests behind them.
struct UpstreamStats : cache::AnswerCacheStats {
    std::uint64_t upstream_requests = 0;  // sent, redirects included
    std::uint64_t upstream_failures = 0;  // fetches sent that gave no good response
};

// One document to fetch.
struct UpstreamRequest {
    std::string url;
    std::string token_host;    // whose credentials are sent ("": none) ...
    std::string token_origin;  // ... to this origin only
    std::string purpose;       // "discovery of HOST", for the log
    http::FetchRules rules;
    bool json_media_type = true;   // the response must say application/json
    bool accept_204 = false;       // a 204 is an answer too (a module download)
    bool explain_refusal = false;  // a 401 or 403 says whether credentials were sent, and why not
    // A token a server refused is sent all the same (`check`: is it valid
    // again?); otherwise a withheld token (refused, expired) is not sent.
    bool send_refused = false;
    // A 401 to the stored token is a verdict on it (token_rejected): true
    // for the services the token is for. A host's discovery document is not
    // one: a host that serves git or a container registry and no Terraform
    // services may refuse it to any token, the good ones among them.
    bool judges_token = true;
};

// How long an answer stays fresh: `ttl` unless the server says otherwise
// (max-age minus Age), clamped into [min_ttl, max_ttl]; a 404 `negative_ttl`.
struct Freshness {
    std::chrono::seconds ttl;
    std::chrono::seconds min_ttl;
    std::chrono::seconds max_ttl;
    std::chrono::seconds negative_ttl;
};

// What the final response means, before its body is read as a document.
struct Verdict {
    enum class Kind { document, none, failed };
    Kind kind = Kind::failed;
    std::optional<http::HttpResponse> response;  // document: the response to read; none: the 404
    std::string url_asked;                       // before redirects
    http::CacheDirectives directives;
    std::string error;  // failed: "URL: why"
    std::optional<long long> retry_after;
    bool stale_ok = true;     // see AnswerCache::Fetched
    bool token_sent = false;  // the host's stored token went with the final request
    // Requests sent upstream for it (redirects included); 0 when it failed
    // before any was sent (discovery, for a registry).
    std::uint64_t requests = 0;
};

class Upstream {
  public:
    using time_point = std::chrono::steady_clock::time_point;

    Upstream(http::HttpClient& http, credentials::TokenLifecycle& credentials)
        : http_(http), credentials_(credentials) {}

    // Fetches and judges one document. When the keyring cannot give the
    // token (locked, absent), the request goes without it, and a 401, 403
    // or 404 to it is a failure naming the keyring's problem: it says
    // nothing about the server, so it is neither cached as "there is none"
    // nor a refusal (the last good answer may stand in). A 401 to the
    // stored token from a request that judges it (judges_token) is
    // remembered (TokenLifecycle::token_rejected), and that token then
    // goes with no request (send_refused aside): they go without one, as
    // they do after its expires_at.
    boost::asio::awaitable<Verdict> fetch(UpstreamRequest request);

    // A fetch that failed before a request was sent (discovery, for a registry).
    Verdict failed(std::string error);

    // The verdict as an AnswerCache keeps it. `read(response, url_asked)`
    // makes the document of a good response (throwing std::exception names
    // what is wrong with it); `none(url)` the document of a 404.
    template <typename Doc, typename Read, typename None>
    typename cache::AnswerCache<Doc>::Fetched settle(Verdict verdict, const Freshness& fresh,
                                                     time_point now, Read&& read, None&& none) {
        typename cache::AnswerCache<Doc>::Fetched out;
        out.store = !verdict.directives.no_store;
        out.retry_after = verdict.retry_after;
        out.stale_ok = verdict.stale_ok;
        if (verdict.kind == Verdict::Kind::none) {
            out.good = {std::make_shared<const Doc>(none(verdict.response->url)), true, now,
                        now + fresh.negative_ttl};
            return out;
        }
        if (verdict.kind == Verdict::Kind::document) {
            const http::HttpResponse& response = *verdict.response;
            try {
                auto document = std::make_shared<const Doc>(read(response, verdict.url_asked));
                const std::chrono::seconds ttl = http::freshness(
                    verdict.directives, response.age, fresh.ttl, fresh.min_ttl, fresh.max_ttl);
                out.good = {std::move(document), false, now, now + ttl};
                return out;
            } catch (const std::exception& e) {
                verdict.error = response.url + ": " + e.what();
            }
        }
        // A failure counts where its requests do: one that failed before
        // any request was sent is the discovery's, not this upstream's.
        if (verdict.requests > 0) ++failures_;
        out.error = std::move(verdict.error);
        return out;
    }

    // `cache`'s counters with this upstream's.
    UpstreamStats stats(const cache::AnswerCacheStats& cache) const;

  private:
    http::HttpClient& http_;
    credentials::TokenLifecycle& credentials_;
    std::uint64_t requests_ = 0, failures_ = 0;
};

}  // namespace hostkeeper::daemon::upstream
