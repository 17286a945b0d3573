#pragma once
// The read-through cache of hosts' credentials in front of the keyring.
// Keyring calls run on a worker executor, so the event loop never blocks on
// D-Bus; concurrent misses for one host share one keyring lookup; write and
// remove go through to the keyring first and only then touch the cache.
// The cache follows the keyring: a keyring event (lock, edit, restart) drops
// it at once, and while the keyring is not watched nothing is cached.

#include <boost/asio/any_io_executor.hpp>
#include <boost/asio/awaitable.hpp>
#include <chrono>
#include <cstdint>
#include <functional>
#include <optional>
#include <string>

#include "daemon/async/purge_timer.hpp"
#include "daemon/async/single_flight.hpp"
#include "daemon/cache/ttl_cache.hpp"
#include "daemon/credentials/credential_cache_options.hpp"
#include "daemon/credentials/credential_store.hpp"
#include "daemon/credentials/keyring.hpp"
#include "daemon/credentials/keyring_events.hpp"
#include "proto/secret.hpp"

namespace hostkeeper::daemon::credentials {

struct CacheStats {
    std::size_t entries = 0;
    std::size_t positive = 0;
    std::size_t negative = 0;
    std::uint64_t hits = 0;
    std::uint64_t misses = 0;
    std::uint64_t keyring_lookups = 0;
    std::uint64_t evictions = 0;
    bool keyring_watched = true;      // false: keyring changes cannot be seen, so nothing is cached
    std::uint64_t invalidations = 0;  // caches dropped because the keyring changed
};

class CredentialCache final : public CredentialStore, public KeyringEvents {
  public:
    using Clock = std::function<std::chrono::steady_clock::time_point()>;
    // Told of each keyring answer on the event loop, before it is cached;
    // what it throws fails the read (and nothing is cached). `current`: no
    // write, keyring event or flush came during the read, so it is cached.
    using ReadCheck = std::function<void(const std::string& host,
                                         const std::optional<proto::Secret>& read, bool current)>;

    // `io`: the event loop's executor. `worker`: where keyring calls run.
    CredentialCache(boost::asio::any_io_executor io, boost::asio::any_io_executor worker,
                    Keyring& keyring, const CredentialCacheOptions& options,
                    Clock clock = std::chrono::steady_clock::now);

    void check_reads(ReadCheck check) { check_ = std::move(check); }

    // The cache's answer, or the keyring's. Throws proto::Error keyring_error
    // for an item that is not a credentials object (credentials_from_keyring_text).
    boost::asio::awaitable<std::optional<proto::Secret>> read(std::string host) override;
    boost::asio::awaitable<void> write(std::string host, proto::Secret credentials) override;
    boost::asio::awaitable<void> remove(std::string host) override;

    // Drops what is cached (all of it: how many; or the host's: whether it was).
    std::size_t clear();
    bool drop(const std::string& host);

    CacheStats stats() const;

    // A mark of the keyring's state, for what is learned from it outside
    // this cache (KeyringItems: which hosts have git items). still_current()
    // holds while no write, keyring event or flush came after the mark,
    // changes were watched all along, and the cache's TTL has not run out.
    struct ReadMark {
        std::uint64_t generation = 0;
        std::chrono::steady_clock::time_point at;
        bool watched = false;
    };
    ReadMark read_mark() const { return {generation_, clock_(), watched_}; }
    bool still_current(const ReadMark& mark) const;
    void stop() { purge_timer_.stop(); }

    // KeyringEvents: drop everything read before, so that a locked keyring
    // serves no token and an edited item is what the next read returns.
    void keyring_changed() override;
    void keyring_watched(bool watched) override;

  private:
    struct Cached {
        std::optional<proto::Secret> credentials;  // nullopt: "none for this host"
    };
    using Cache = cache::TtlCache<Cached>;

    boost::asio::awaitable<std::optional<proto::Secret>> load(std::string host);
    // After a write or remove begun at `generation`: `credentials` cached,
    // unless something came meanwhile (then nothing is; the next read asks).
    void written(const std::string& host, std::uint64_t generation,
                 std::optional<proto::Secret> credentials);
    void remember(const std::string& host, std::optional<proto::Secret> credentials);

    boost::asio::any_io_executor io_;
    boost::asio::any_io_executor worker_;
    Keyring& keyring_;
    CredentialCacheOptions options_;
    Clock clock_;
    ReadCheck check_;
    Cache cache_;
    async::SingleFlight<std::optional<proto::Secret>> flights_;
    std::uint64_t generation_ =
        0;  // bumped by every write and keyring event, so a slow lookup cannot cache an old answer
    bool watched_ = true;
    std::uint64_t invalidations_ = 0;
    std::uint64_t hits_ = 0;
    std::uint64_t misses_ = 0;
    std::uint64_t keyring_lookups_ = 0;
    async::PurgeTimer purge_timer_;
};

}  // namespace hostkeeper::daemon::credentials
