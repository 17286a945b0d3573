#include "discovery_service.hpp"

#include <boost/asio/redirect_error.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <exception>
#include <set>
#include <spdlog/spdlog.h>

#include "cache_control.hpp"
#include "url.hpp"

namespace hostkeeper::daemon {
namespace asio = boost::asio;
using std::chrono::seconds;
using steady = std::chrono::steady_clock;

std::string_view to_string(DiscoverySource source) noexcept {
    switch (source) {
        case DiscoverySource::network: return "network";
        case DiscoverySource::cache: return "cache";
        case DiscoverySource::stale: return "stale";
        case DiscoverySource::forced: return "forced";
    }
    return "network";
}

namespace {

bool is_redirect(long status) {
    return status == 301 || status == 302 || status == 303 || status == 307 || status == 308;
}

seconds whole_seconds(steady::duration d) {
    return std::max(seconds(0), std::chrono::duration_cast<seconds>(d));
}

}  // namespace

DiscoveryDocument::DiscoveryDocument(std::string url_, Services services_)
    : url(std::move(url_)), services(std::move(services_)) {
    proto::Json object = {{"url", url}, {"services", services.services}};
    if (!services.invalid.empty()) object["invalid"] = services.invalid;
    json = object.dump();
    json = json.substr(1, json.size() - 2);  // without the braces
}

DiscoveryService::DiscoveryService(asio::any_io_executor io, HttpClient& http, CredentialService& credentials,
                                   DiscoveryOptions options, Clock clock)
    : io_(std::move(io)),
      http_(http),
      credentials_(credentials),
      options_(std::move(options)),
      clock_(std::move(clock)),
      cache_(options_.max_entries),
      flights_(io_),
      purge_timer_(io_, clock_, [this] {
          cache_.purge(clock_());
          return cache_.next_expiry();
      }) {
    // Forced services answer as a document served at https://NAME/ would.
    for (const auto& [host, services] : options_.forced) {
        const std::string url = discovery_url(host);
        forced_.emplace(host, std::make_shared<const DiscoveryDocument>(url, resolve_services(services, url)));
    }
}

asio::awaitable<DiscoveryAnswer> DiscoveryService::discover(std::string host, bool refresh_now) {
    const time_point now = clock_();
    if (const auto forced = forced_.find(host); forced != forced_.end()) {
        ++forced_hits_;
        DiscoveryAnswer answer;
        answer.source = DiscoverySource::forced;
        answer.document = forced->second;
        co_return answer;
    }
    if (!refresh_now) {
        if (const Entry* entry = cache_.find(host, now)) {
            if (entry->good && now < entry->good->fresh_until) {
                ++hits_;
                co_return answer(*entry->good, DiscoverySource::cache, now);
            }
            if (entry->failure && now < entry->failure->retry_at) {
                if (entry->good && usable_stale(*entry->good, now)) {
                    ++stale_;
                    DiscoveryAnswer stale = answer(*entry->good, DiscoverySource::stale, now);
                    stale.error = entry->failure->message;
                    co_return stale;
                }
                throw DiscoveryError(entry->failure->message, true, whole_seconds(entry->failure->retry_at - now));
            }
        }
    }
    ++misses_;
    // Named, not temporaries in the co_await expression: g++ 12 may destroy
    // such temporaries twice.
    auto work = [this, host] { return refresh(host); };
    auto copy = [](const DiscoveryAnswer& a) { return a; };
    auto shared = flights_.run(host, std::move(work), copy);
    co_return co_await std::move(shared);
}

asio::awaitable<DiscoveryAnswer> DiscoveryService::refresh(std::string host) {
    Fetched fetched = co_await fetch(host);
    const time_point now = clock_();
    std::optional<Entry> previous;
    if (const Entry* entry = cache_.find(host, now)) previous = *entry;
    co_return settle(host, std::move(fetched), previous ? &*previous : nullptr);
}

asio::awaitable<std::optional<proto::Secret>> DiscoveryService::token_for(const std::string& host) {
    try {
        const std::optional<proto::Secret> credentials = co_await credentials_.get(host);
        if (!credentials) co_return std::nullopt;
        proto::Json object = proto::Json::parse(credentials->view());
        const proto::ScrubGuard guard(object);
        const auto token = object.find("token");
        if (token == object.end() || !token->is_string()) co_return std::nullopt;
        co_return proto::Secret(token->get_ref<const std::string&>());
    } catch (const std::exception& e) {
        // Discovery goes on without credentials; a host that needs them says so.
        spdlog::warn("discovery of {}: not sending credentials: {}", host, e.what());
    }
    co_return std::nullopt;
}

asio::awaitable<DiscoveryService::Fetched> DiscoveryService::fetch(const std::string& host) {
    Fetched out;
    const std::string origin = discovery_url(host);
    std::string url = origin;
    const std::optional<proto::Secret> token = co_await token_for(host);
    const steady::time_point deadline = steady::now() + options_.timeout;
    std::set<std::string> seen{url};
    for (int redirects = 0;; ++redirects) {
        HttpRequest request;
        request.url = url;
        request.max_body = kMaxDiscoveryDocument;
        request.timeout = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - steady::now());
        if (request.timeout.count() <= 0) {
            fail(out, url, "timed out after " + std::to_string(options_.timeout.count()) + " s");
            co_return out;
        }
        // The token goes to its own host only: never along a redirect elsewhere.
        if (token && same_origin(url, origin)) request.bearer_token = token->clone();
        ++upstream_requests_;
        HttpResponse response;
        std::string failure;
        try {
            response = co_await http_.fetch(std::move(request));
        } catch (const HttpError& e) {
            failure = e.what();
        }
        if (!failure.empty()) {
            fail(out, url, failure);
            co_return out;
        }
        std::optional<std::string> next = judge(response, redirects, seen, out);
        if (!next) co_return out;
        url = std::move(*next);
    }
}

std::optional<std::string> DiscoveryService::judge(const HttpResponse& response, int redirects,
                                                   std::set<std::string>& seen, Fetched& out) {
    const std::string& url = response.url;
    if (is_redirect(response.status)) {
        if (response.location.empty()) {
            fail(out, url, "HTTP status " + std::to_string(response.status) + " redirect without a Location");
        } else if (redirects == kMaxDiscoveryRedirects) {
            fail(out, url,
                 "more than " + std::to_string(kMaxDiscoveryRedirects) + " redirects (the next to " +
                     response.location + ")");
        } else if (!seen.insert(response.location).second) {
            fail(out, url, "redirect loop: redirected back to " + response.location);
        } else {
            return response.location;
        }
        return std::nullopt;
    }
    const time_point now = clock_();
    const CacheDirectives directives = parse_cache_control(response.cache_control);
    out.store = !directives.no_store;
    if (response.status == 404) {
        out.good = Good{std::make_shared<const DiscoveryDocument>(url, Services{}), true, now, now + options_.negative_ttl};
    } else if (response.status != 200) {
        out.retry_after = response.retry_after;
        fail(out, url, "HTTP status " + std::to_string(response.status));
    } else if (response.content_type.empty()) {
        fail(out, url, "the response has no Content-Type; a discovery document must be application/json");
    } else if (!is_json_media_type(response.content_type)) {
        fail(out, url, "the Content-Type is \"" + response.content_type + "\", not application/json");
    } else {
        try {
            Services services = parse_discovery_document(response.body, url);
            const seconds ttl = freshness(directives, response.age, options_.ttl, options_.min_ttl, options_.max_ttl);
            out.good = Good{std::make_shared<const DiscoveryDocument>(url, std::move(services)), false, now, now + ttl};
        } catch (const std::exception& e) {
            fail(out, url, e.what());
        }
    }
    return std::nullopt;
}

void DiscoveryService::fail(Fetched& out, const std::string& url, const std::string& why) {
    ++upstream_failures_;
    out.error = url + ": " + why;
}

DiscoveryAnswer DiscoveryService::settle(const std::string& host, Fetched fetched, const Entry* previous) {
    const time_point now = clock_();
    if (fetched.good) {
        if (fetched.store) {
            keep(host, Entry{fetched.good, std::nullopt}, now);
        } else {
            cache_.erase(host);
        }
        return answer(*fetched.good, DiscoverySource::network, now);
    }
    seconds retry = options_.error_ttl;
    if (fetched.retry_after) {
        retry = std::max(retry, std::min(seconds(*fetched.retry_after), options_.max_retry_after));
    }
    spdlog::info("discovery of {} failed: {} (asking again in {} s)", host, fetched.error, retry.count());
    Entry entry;
    if (previous != nullptr && previous->good && usable_stale(*previous->good, now)) entry.good = previous->good;
    entry.failure = Failure{fetched.error, now + retry};
    keep(host, entry, now);
    if (entry.good) {
        ++stale_;
        DiscoveryAnswer stale = answer(*entry.good, DiscoverySource::stale, now);
        stale.error = fetched.error;
        return stale;
    }
    throw DiscoveryError(fetched.error, false, retry);
}

DiscoveryAnswer DiscoveryService::answer(const Good& good, DiscoverySource source, time_point now) const {
    DiscoveryAnswer out;
    out.source = source;
    out.document = good.document;
    out.age = whole_seconds(now - good.fetched);
    out.expires_in = whole_seconds(good.fresh_until - now);
    return out;
}

bool DiscoveryService::usable_stale(const Good& good, time_point now) const {
    return now < good.fresh_until + options_.stale_if_error;
}

// Kept as long as any part of it can still be served.
void DiscoveryService::keep(const std::string& host, Entry entry, time_point now) {
    time_point until = now;
    if (entry.good) until = std::max(until, entry.good->fresh_until + options_.stale_if_error);
    if (entry.failure) until = std::max(until, entry.failure->retry_at);
    const steady::duration lifetime = until - now;
    if (const auto expiry = cache_.put(host, std::move(entry), Cache::Lifetime{lifetime, lifetime}, now)) {
        purge_timer_.schedule(*expiry);
    }
}

std::size_t DiscoveryService::flush() { return cache_.clear(); }

std::size_t DiscoveryService::flush(const std::string& host) { return cache_.erase(host) ? 1 : 0; }

DiscoveryStats DiscoveryService::stats() const {
    DiscoveryStats s;
    cache_.for_each([&s](const std::string&, const Entry& entry) {
        if (entry.failure) {
            ++s.errors;
        } else if (entry.good && entry.good->empty) {
            ++s.empty;
        } else {
            ++s.positive;
        }
    });
    s.entries = cache_.size();
    s.hits = hits_;
    s.misses = misses_;
    s.stale = stale_;
    s.forced = forced_hits_;
    s.upstream_requests = upstream_requests_;
    s.upstream_failures = upstream_failures_;
    s.in_flight = flights_.size();
    s.evictions = cache_.evictions();
    return s;
}

void DiscoveryService::stop() { purge_timer_.stop(); }

}  // namespace hostkeeper::daemon
