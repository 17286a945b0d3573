#include "discovery_service.hpp"

#include <exception>
#include <variant>

#include "bearer_token.hpp"
#include "cache_control.hpp"
#include "http_fetch.hpp"
#include "http_text.hpp"

namespace hostkeeper::daemon {
namespace asio = boost::asio;
using std::chrono::seconds;

std::string_view to_string(DiscoverySource source) noexcept {
    switch (source) {
        case DiscoverySource::network: return "network";
        case DiscoverySource::cache: return "cache";
        case DiscoverySource::stale: return "stale";
        case DiscoverySource::forced: return "forced";
    }
    return "network";
}

DiscoveryDocument::DiscoveryDocument(std::string url_, Services services_)
    : url(std::move(url_)), services(std::move(services_)) {
    proto::Json object = {{"url", url}, {"services", services.services}};
    if (!services.invalid.empty()) object["invalid"] = services.invalid;
    json = object.dump();
    json = json.substr(1, json.size() - 2);  // without the braces
}

namespace {

AnswerCacheOptions cache_options(const DiscoveryOptions& options) {
    return {options.error_ttl, options.max_retry_after, options.stale_if_error, options.max_entries};
}

}  // namespace

DiscoveryService::DiscoveryService(asio::any_io_executor io, HttpClient& http, CredentialService& credentials,
                                   DiscoveryOptions options, Clock clock)
    : http_(http),
      credentials_(credentials),
      options_(std::move(options)),
      clock_(std::move(clock)),
      cache_(std::move(io), clock_, cache_options(options_), "discovery of") {
    // Forced services answer as a document served at https://NAME/ would.
    for (const auto& [host, services] : options_.forced) {
        const std::string url = discovery_url(host);
        forced_.emplace(host, std::make_shared<const DiscoveryDocument>(url, resolve_services(services, url)));
    }
}

asio::awaitable<DiscoveryAnswer> DiscoveryService::discover(std::string host, bool refresh_now) {
    if (const auto forced = forced_.find(host); forced != forced_.end()) {
        ++forced_hits_;
        DiscoveryAnswer answer;
        answer.source = DiscoverySource::forced;
        answer.document = forced->second;
        co_return answer;
    }
    // Named, not temporaries in the co_await expression: g++ 12 may destroy
    // such temporaries twice.
    auto fetch_host = [this, host] { return fetch(host); };
    auto lookup = cache_.get(host, refresh_now, fetch_host, host);
    const Cache::Result result = co_await std::move(lookup);
    if (const auto* failed = std::get_if<Cache::Failed>(&result)) {
        throw DiscoveryError(failed->message, failed->cached, failed->retry_in);
    }
    const auto& found = std::get<Cache::Answer>(result);
    DiscoveryAnswer answer;
    answer.source = found.source == AnswerSource::cache   ? DiscoverySource::cache
                    : found.source == AnswerSource::stale ? DiscoverySource::stale
                                                          : DiscoverySource::network;
    answer.document = found.document;
    answer.age = found.age;
    answer.expires_in = found.expires_in;
    answer.error = found.error;
    co_return answer;
}

asio::awaitable<DiscoveryService::Cache::Fetched> DiscoveryService::fetch(std::string host) {
    Cache::Fetched out;
    const std::string origin = discovery_url(host);
    // Named, not a temporary in the co_await expression (g++ 12).
    std::string purpose = "discovery of " + host;
    const std::optional<proto::Secret> token = co_await bearer_token(credentials_, host, std::move(purpose));
    FetchRules rules;
    rules.max_body = kMaxDiscoveryDocument;
    rules.max_redirects = kMaxDiscoveryRedirects;
    rules.timeout = options_.timeout;
    const FetchResult fetched = co_await fetch_following(http_, origin, token, origin, rules);
    upstream_requests_ += fetched.requests;
    if (!fetched.response) {
        fail(out, fetched.error);
    } else {
        judge(*fetched.response, out);
    }
    co_return out;
}

void DiscoveryService::judge(const HttpResponse& response, Cache::Fetched& out) {
    const std::string& url = response.url;
    const auto now = clock_();
    const CacheDirectives directives = parse_cache_control(response.cache_control);
    out.store = !directives.no_store;
    if (response.status == 404) {
        auto empty = std::make_shared<const DiscoveryDocument>(url, Services{});
        out.good = Cache::Good{std::move(empty), true, now, now + options_.negative_ttl};
    } else if (response.status != 200) {
        out.retry_after = response.retry_after;
        out.stale_ok = !is_refusal(response.status);
        fail(out, url + ": HTTP status " + std::to_string(response.status));
    } else if (const std::string problem = json_media_type_problem(response.content_type); !problem.empty()) {
        fail(out, url + ": " + problem);
    } else {
        try {
            Services services = parse_discovery_document(response.body, url);
            const seconds ttl = freshness(directives, response.age, options_.ttl, options_.min_ttl, options_.max_ttl);
            auto document = std::make_shared<const DiscoveryDocument>(url, std::move(services));
            out.good = Cache::Good{std::move(document), false, now, now + ttl};
        } catch (const std::exception& e) {
            fail(out, url + ": " + e.what());
        }
    }
}

void DiscoveryService::fail(Cache::Fetched& out, const std::string& error) {
    ++upstream_failures_;
    out.error = error;
}

std::size_t DiscoveryService::flush() { return cache_.flush(); }

std::size_t DiscoveryService::flush(const std::string& host) {
    return cache_.flush_if([&host](const std::string& key) { return key == host; });
}

DiscoveryStats DiscoveryService::stats() const {
    DiscoveryStats s;
    static_cast<AnswerCacheStats&>(s) = cache_.stats();
    s.forced = forced_hits_;
    s.upstream_requests = upstream_requests_;
    s.upstream_failures = upstream_failures_;
    return s;
}

void DiscoveryService::stop() { cache_.stop(); }

}  // namespace hostkeeper::daemon
