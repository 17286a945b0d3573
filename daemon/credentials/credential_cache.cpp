#include "daemon/credentials/credential_cache.hpp"

#include <utility>

#include "daemon/async/on_worker.hpp"
#include "daemon/credentials/keyring_text.hpp"
#include "daemon/credentials/terraform_items.hpp"
#include "proto/error.hpp"
#include "proto/json.hpp"
#include "proto/messages.hpp"

namespace hostkeeper::daemon::credentials {
namespace asio = boost::asio;
using proto::Error;
using proto::ErrorCode;
using proto::Secret;

CredentialCache::CredentialCache(asio::any_io_executor io, asio::any_io_executor worker,
                                 Keyring& keyring, const CredentialCacheOptions& options,
                                 Clock clock)
    : io_(std::move(io)),
      worker_(std::move(worker)),
      keyring_(keyring),
      options_(options),
      clock_(std::move(clock)),
      cache_(options.max_entries),
      flights_(io_),
      purge_timer_(io_, clock_, [this] {
          cache_.purge(clock_());
          return cache_.next_expiry();
      }) {}

asio::awaitable<std::optional<Secret>> CredentialCache::read(std::string host) {
    if (Cached* cached = cache_.find(host, clock_())) {
        ++hits_;
        co_return clone_optional(cached->credentials);
    }
    ++misses_;
    // Named first.
    auto work = [this, host] { return load(host); };
    // A lookup started before a keyring event (a lock, an edit) is not shared
    // with a read that comes after it: that one asks the keyring itself.
    const std::string flight = host + '\0' + std::to_string(generation_);
    auto shared = flights_.run(flight, std::move(work), clone_optional);
    co_return co_await std::move(shared);
}

// One keyring lookup, cached unless a write happened meanwhile.
asio::awaitable<std::optional<Secret>> CredentialCache::load(std::string host) {
    const std::uint64_t generation = generation_;
    ++keyring_lookups_;
    // Named first.
    auto lookup = [this, host]() -> std::optional<Secret> {
        std::optional<Secret> text = TerraformItems(keyring_).lookup(host);
        if (!text) return std::nullopt;
        return credentials_from_keyring_text(host, *text);
    };
    std::optional<Secret> result = co_await async::on_worker(worker_, std::move(lookup));
    const bool current = generation == generation_;
    if (check_) check_(host, result, current);
    if (current) remember(host, clone_optional(result));
    co_return result;
}

asio::awaitable<void> CredentialCache::write(std::string host, Secret credentials) {
    const std::uint64_t generation = generation_;
    auto write = [this, host, copy = credentials.clone()]() {
        TerraformItems(keyring_).store(host, copy);
    };
    co_await async::on_worker(worker_, std::move(write));
    written(host, generation, std::move(credentials));
}

asio::awaitable<void> CredentialCache::remove(std::string host) {
    auto remove = [this, host]() { (void)TerraformItems(keyring_).remove(host); };
    const std::uint64_t generation = generation_;
    co_await async::on_worker(worker_, std::move(remove));
    written(host, generation, std::nullopt);
}

void CredentialCache::written(const std::string& host, std::uint64_t generation,
                              std::optional<Secret> credentials) {
    // A keyring event (a lock) or another write meanwhile: keep nothing; the
    // next read asks the keyring.
    const bool undisturbed = generation == generation_;
    ++generation_;
    if (undisturbed) {
        remember(host, std::move(credentials));
    } else {
        cache_.erase(host);
    }
}

void CredentialCache::remember(const std::string& host, std::optional<Secret> credentials) {
    if (!watched_) {
        // A lock or an edit would go unseen: ask the keyring every time.
        cache_.erase(host);
        return;
    }
    const bool positive = credentials.has_value();
    const Cache::Lifetime lifetime =
        positive ? Cache::Lifetime{options_.ttl, options_.max_lifetime}
                 : Cache::Lifetime{options_.negative_ttl, options_.negative_ttl};
    if (const auto expiry = cache_.put(host, Cached{std::move(credentials)}, lifetime, clock_())) {
        purge_timer_.schedule(*expiry);
    }
}

std::size_t CredentialCache::clear() {
    ++generation_;
    return cache_.clear();
}

bool CredentialCache::drop(const std::string& host) {
    ++generation_;
    return cache_.erase(host);
}

CacheStats CredentialCache::stats() const {
    CacheStats s;
    cache_.for_each([&s](const std::string&, const Cached& cached) {
        ++(cached.credentials ? s.positive : s.negative);
    });
    s.entries = cache_.size();
    s.hits = hits_;
    s.misses = misses_;
    s.keyring_lookups = keyring_lookups_;
    s.evictions = cache_.evictions();
    s.keyring_watched = watched_;
    s.invalidations = invalidations_;
    return s;
}

bool CredentialCache::still_current(const ReadMark& mark) const {
    return mark.watched && watched_ && mark.generation == generation_ &&
           clock_() - mark.at < options_.ttl;
}

void CredentialCache::keyring_changed() {
    ++generation_;
    ++invalidations_;
    cache_.clear();
}

void CredentialCache::keyring_watched(bool watched) {
    // Only a change matters: a repeated report must not drop what was cached
    // while the watch stood.
    if (watched == watched_) return;
    ++generation_;
    watched_ = watched;
    cache_.clear();
}

}  // namespace hostkeeper::daemon::credentials
