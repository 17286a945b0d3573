#pragma once
// A pure TTL cache with two clocks per entry, as gpg-agent keeps secrets: a
// sliding lifetime renewed on each use and an absolute cap from load. Time
// is passed in, never read, so tests drive it with a fake clock; the cache
// only computes expiry, the event loop does the waiting. A size cap evicts
// the least recently used entry.

#include <algorithm>
#include <chrono>
#include <cstddef>
#include <list>
#include <optional>
#include <string>
#include <unordered_map>
#include <utility>

namespace hostkeeper::daemon::cache {

template <typename Value, typename Clock = std::chrono::steady_clock>
class TtlCache {
  public:
    using time_point = typename Clock::time_point;
    using duration = typename Clock::duration;

    struct Lifetime {
        duration idle;  // sliding: expires this long after the last use
        duration max;   // absolute: expires this long after load, however often used
    };

    explicit TtlCache(std::size_t max_entries) : max_entries_(max_entries) {}

    // The live value for `key`, its sliding lifetime renewed; nullptr when
    // there is none or it has expired (an expired entry is dropped).
    Value* find(const std::string& key, time_point now) {
        const auto it = entries_.find(key);
        if (it == entries_.end()) return nullptr;
        Entry& entry = it->second;
        if (entry.expires() <= now) {
            drop(it);
            return nullptr;
        }
        entry.used = now;
        lru_.splice(lru_.begin(), lru_, entry.lru);
        return &entry.value;
    }

    // Inserts or replaces. A lifetime of zero caches nothing and drops any
    // older entry, so that disabling the cache never serves stale values.
    // Returns the new entry's expiry, or nullopt when nothing was stored.
    std::optional<time_point> put(const std::string& key, Value value, Lifetime lifetime,
                                  time_point now) {
        erase(key);
        if (lifetime.idle <= duration::zero() || lifetime.max <= duration::zero() ||
            max_entries_ == 0) {
            return std::nullopt;
        }
        while (entries_.size() >= max_entries_) {
            drop(entries_.find(lru_.back()));
            ++evictions_;
        }
        lru_.push_front(key);
        const auto [it, inserted] =
            entries_.emplace(key, Entry{std::move(value), now, now, lifetime, lru_.begin()});
        return it->second.expires();
    }

    bool erase(const std::string& key) {
        const auto it = entries_.find(key);
        if (it == entries_.end()) return false;
        drop(it);
        return true;
    }

    std::size_t clear() {
        const std::size_t n = entries_.size();
        entries_.clear();
        lru_.clear();
        return n;
    }

    // Drops every expired entry; returns how many.
    std::size_t purge(time_point now) {
        std::size_t n = 0;
        for (auto it = entries_.begin(); it != entries_.end();) {
            if (it->second.expires() <= now) {
                lru_.erase(it->second.lru);
                it = entries_.erase(it);
                ++n;
            } else {
                ++it;
            }
        }
        return n;
    }

    // When the next entry expires, for the event loop's timer. O(n).
    std::optional<time_point> next_expiry() const {
        std::optional<time_point> next;
        for (const auto& [key, entry] : entries_) {
            if (!next || entry.expires() < *next) next = entry.expires();
        }
        return next;
    }

    template <typename F>
    void for_each(F&& f) const {
        for (const auto& [key, entry] : entries_) f(key, entry.value);
    }

    std::size_t size() const { return entries_.size(); }
    std::size_t evictions() const { return evictions_; }

  private:
    struct Entry {
        Value value;
        time_point loaded;
        time_point used;
        Lifetime lifetime;
        std::list<std::string>::iterator lru;
        time_point expires() const { return std::min(used + lifetime.idle, loaded + lifetime.max); }
    };
    using Map = std::unordered_map<std::string, Entry>;

    void drop(typename Map::iterator it) {
        lru_.erase(it->second.lru);
        entries_.erase(it);
    }

    std::size_t max_entries_;
    std::size_t evictions_ = 0;
    Map entries_;
    std::list<std::string> lru_;  // most recently used first
};

}  // namespace hostkeeper::daemon::cache
