#pragma once
// The machinery discovery and the registry clients share: a TTL cache of
// answers fetched from servers. A fresh answer comes from the cache;
// concurrent requests for a cold key share one fetch (single flight);
// failures are remembered briefly (Retry-After honoured) and, within the
// stale-if-error limit, answered with the last good document. Event-loop only.

#include <spdlog/spdlog.h>

#include <algorithm>
#include <boost/asio/any_io_executor.hpp>
#include <boost/asio/awaitable.hpp>
#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <variant>
#include <vector>

#include "daemon/async/purge_timer.hpp"
#include "daemon/async/single_flight.hpp"
#include "daemon/cache/ttl_cache.hpp"
#include "proto/error.hpp"

namespace hostkeeper::daemon::cache {

enum class AnswerSource { network, cache, stale };

inline std::string_view to_string(AnswerSource source) noexcept {
    switch (source) {
        case AnswerSource::network:
            return "network";
        case AnswerSource::cache:
            return "cache";
        case AnswerSource::stale:
            return "stale";
    }
    return "network";
}

struct AnswerCacheOptions {
    std::chrono::seconds error_ttl{10};         // failures are remembered this long ...
    std::chrono::seconds max_retry_after{600};  // ... or as Retry-After asks, at most this
    std::chrono::seconds stale_if_error{
        86400};  // last good answer served this long past its freshness
    std::size_t max_entries = 10'000;
};

struct AnswerCacheStats {
    std::size_t entries = 0;
    std::size_t positive = 0;
    std::size_t empty = 0;
    std::size_t errors = 0;
    std::uint64_t hits = 0;
    std::uint64_t misses = 0;
    std::uint64_t stale = 0;
    std::size_t in_flight = 0;
    std::size_t evictions = 0;
};

// A failed fetch as a client sees it: the code (discovery_failed,
// registry_failed) and message, plus whether it was a remembered failure
// and when the server will be asked again.
class FetchFailure : public proto::Error {
  public:
    FetchFailure(proto::ErrorCode code, const std::string& message, bool cached,
                 std::chrono::seconds retry_in)
        : proto::Error(code, message), cached_(cached), retry_in_(retry_in) {}
    bool cached() const noexcept { return cached_; }
    std::chrono::seconds retry_in() const noexcept { return retry_in_; }

  private:
    bool cached_;
    std::chrono::seconds retry_in_;
};

inline std::chrono::seconds whole_seconds(std::chrono::steady_clock::duration d) {
    return std::max(std::chrono::seconds(0), std::chrono::duration_cast<std::chrono::seconds>(d));
}

template <typename Doc>
class AnswerCache {
  public:
    using time_point = std::chrono::steady_clock::time_point;
    using Clock = std::function<time_point()>;

    // A good response: a document, or "there is none" (a 404) when `empty`.
    struct Good {
        std::shared_ptr<const Doc> document;
        bool empty = false;
        time_point fetched;
        time_point fresh_until;
    };
    // What one fetch found out: a good response (with its freshness), or why not.
    struct Fetched {
        std::optional<Good> good;
        bool store = true;  // false for no-store
        std::string error;  // "URL: why", when there is no good response
        std::optional<long long> retry_after;
        // Whether the last good answer may stand in (stale-if-error): yes for
        // network failures, 5xx and malformed documents; not when the server
        // refused the request (401, 403, 410, ...).
        bool stale_ok = true;
    };
    struct Answer {
        AnswerSource source = AnswerSource::network;
        std::shared_ptr<const Doc> document;
        bool empty = false;
        std::chrono::seconds age{0};         // since fetched
        std::chrono::seconds expires_in{0};  // fresh for this much longer
        std::string error;                   // why a stale answer is stale
    };
    struct Failed {
        std::string message;
        bool cached = false;  // a remembered failure, not this request's
        std::chrono::seconds retry_in{0};
    };
    using Result = std::variant<Answer, Failed>;
    using Fetch = std::function<boost::asio::awaitable<Fetched>()>;

    AnswerCache(boost::asio::any_io_executor io, Clock clock, AnswerCacheOptions options,
                std::string what)
        : clock_(std::move(clock)),
          options_(options),
          what_(std::move(what)),
          cache_(options_.max_entries),
          flights_(io),
          purge_timer_(io, clock_, [this] {
              cache_.purge(clock_());
              return cache_.next_expiry();
          }) {}

    // The answer for `key`: from the cache when fresh (or when a remembered
    // failure stands), else from `fetch`, shared by every caller meanwhile.
    // `refresh` skips the cache. `label` names the key in the log.
    boost::asio::awaitable<Result> get(std::string key, bool refresh, Fetch fetch,
                                       std::string label) {
        if (!refresh) {
            if (std::optional<Result> cached = lookup(key)) co_return std::move(*cached);
        }
        ++misses_;
        // Named first.
        auto work = [this, key, fetch = std::move(fetch), label = std::move(label)] {
            return fetch_and_settle(key, fetch, label);
        };
        auto copy = [](const Result& r) { return r; };
        auto shared = flights_.run(key, std::move(work), copy);
        co_return co_await std::move(shared);
    }

    std::size_t flush() { return cache_.clear(); }

    // Drops the entries whose key `matches`.
    template <typename Pred>
    std::size_t flush_if(Pred matches) {
        std::vector<std::string> keys;
        cache_.for_each([&](const std::string& key, const Entry&) {
            if (matches(key)) keys.push_back(key);
        });
        for (const std::string& key : keys) cache_.erase(key);
        return keys.size();
    }

    AnswerCacheStats stats() const {
        AnswerCacheStats s;
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
        s.in_flight = flights_.size();
        s.evictions = cache_.evictions();
        return s;
    }

    void stop() { purge_timer_.stop(); }

  private:
    struct Failure {
        std::string message;
        time_point retry_at;
    };
    struct Entry {
        std::optional<Good> good;
        std::optional<Failure> failure;
    };
    using Cache = TtlCache<Entry>;

    std::optional<Result> lookup(const std::string& key) {
        const time_point now = clock_();
        const Entry* entry = cache_.find(key, now);
        if (entry == nullptr) return std::nullopt;
        if (entry->good && now < entry->good->fresh_until) {
            ++hits_;
            return answer(*entry->good, AnswerSource::cache, now);
        }
        if (entry->failure && now < entry->failure->retry_at) {
            if (entry->good && usable_stale(*entry->good, now)) {
                ++stale_;
                Answer stale = answer(*entry->good, AnswerSource::stale, now);
                stale.error = entry->failure->message;
                return stale;
            }
            return Failed{entry->failure->message, true,
                          whole_seconds(entry->failure->retry_at - now)};
        }
        return std::nullopt;
    }

    boost::asio::awaitable<Result> fetch_and_settle(std::string key, Fetch fetch,
                                                    std::string label) {
        Fetched fetched = co_await fetch();
        co_return settle(key, std::move(fetched), label);
    }

    Result settle(const std::string& key, Fetched fetched, const std::string& label) {
        const time_point now = clock_();
        std::optional<Good> previous;
        if (const Entry* entry = cache_.find(key, now); entry != nullptr && entry->good)
            previous = entry->good;
        if (fetched.good) {
            if (fetched.store) {
                keep(key, Entry{fetched.good, std::nullopt}, now);
            } else {
                cache_.erase(key);
            }
            return answer(*fetched.good, AnswerSource::network, now);
        }
        std::chrono::seconds retry = options_.error_ttl;
        if (fetched.retry_after) {
            retry = std::max(retry, std::min(std::chrono::seconds(*fetched.retry_after),
                                             options_.max_retry_after));
        }
        spdlog::info("{} {} failed: {} (asking again in {} s)", what_, label, fetched.error,
                     retry.count());
        Entry entry;
        if (previous && fetched.stale_ok && usable_stale(*previous, now)) entry.good = previous;
        entry.failure = Failure{fetched.error, now + retry};
        keep(key, entry, now);
        if (entry.good) {
            ++stale_;
            Answer stale = answer(*entry.good, AnswerSource::stale, now);
            stale.error = fetched.error;
            return stale;
        }
        return Failed{fetched.error, false, retry};
    }

    Answer answer(const Good& good, AnswerSource source, time_point now) const {
        Answer out;
        out.source = source;
        out.document = good.document;
        out.empty = good.empty;
        out.age = whole_seconds(now - good.fetched);
        out.expires_in = whole_seconds(good.fresh_until - now);
        return out;
    }

    bool usable_stale(const Good& good, time_point now) const {
        return now < good.fresh_until + options_.stale_if_error;
    }

    // Kept as long as any part of it can still be served.
    void keep(const std::string& key, Entry entry, time_point now) {
        time_point until = now;
        if (entry.good) until = std::max(until, entry.good->fresh_until + options_.stale_if_error);
        if (entry.failure) until = std::max(until, entry.failure->retry_at);
        const auto lifetime = until - now;
        if (const auto expiry = cache_.put(key, std::move(entry),
                                           typename Cache::Lifetime{lifetime, lifetime}, now)) {
            purge_timer_.schedule(*expiry);
        }
    }

    Clock clock_;
    AnswerCacheOptions options_;
    std::string what_;  // "discovery of", for the log
    Cache cache_;
    async::SingleFlight<Result> flights_;
    std::uint64_t hits_ = 0, misses_ = 0, stale_ = 0;
    async::PurgeTimer purge_timer_;
};

}  // namespace hostkeeper::daemon::cache
