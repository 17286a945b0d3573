#pragma once
// Credentials for a host: the token life cycle (token_lifecycle.hpp: what is
// handed out or withheld, expiry warnings, token commands, login refresh,
// rotation) over the read-through cache in front of the keyring
// (credential_cache.hpp: keyring reads with a TTL, dropped on keyring
// events). This class owns the two and wires them together; it answers
// what spans both (flush, stats), and hands out each: tokens() for the
// life cycle, the keyring's read marks for the item listings.

#include <boost/asio/any_io_executor.hpp>
#include <boost/asio/awaitable.hpp>
#include <chrono>
#include <cstddef>
#include <functional>
#include <string>

#include "daemon/credentials/credential_cache.hpp"
#include "daemon/credentials/credential_cache_options.hpp"
#include "daemon/credentials/keyring.hpp"
#include "daemon/credentials/keyring_events.hpp"
#include "daemon/credentials/token_lifecycle.hpp"

namespace hostkeeper::daemon::credentials {

struct CredentialStats : CacheStats, LifecycleStats {
    std::chrono::steady_clock::time_point now;  // the service's clock when this was made
};

class CredentialService final : public KeyringEvents {
  public:
    using Clock = std::function<std::chrono::steady_clock::time_point()>;
    using WallClock = TokenLifecycle::WallClock;
    using ReadMark = CredentialCache::ReadMark;

    // `io`: the event loop's executor. `worker`: where keyring calls run.
    // `wall_clock`: what stored expiries (expires_at) are compared with.
    CredentialService(boost::asio::any_io_executor io, boost::asio::any_io_executor worker,
                      Keyring& keyring, const CredentialCacheOptions& options,
                      Clock clock = std::chrono::steady_clock::now,
                      WallClock wall_clock = std::chrono::system_clock::now);

    // The token life cycle (token_lifecycle.hpp): what is handed out or
    // withheld, expiry, token commands, refresh and rotation. The daemon's
    // consumers of tokens hold it, not this class.
    TokenLifecycle& tokens() { return lifecycle_; }
    const TokenLifecycle& tokens() const { return lifecycle_; }

    // Drops what is cached (all of it, or the host's): credentials read,
    // command tokens, and refusals of tokens (token_rejected). How many.
    std::size_t flush() { return cache_.clear() + lifecycle_.flush(); }
    std::size_t flush(const std::string& host) {
        return lifecycle_.flush(host) + (cache_.drop(host) ? 1 : 0);
    }

    std::chrono::steady_clock::time_point now() const { return clock_(); }
    CredentialStats stats() const;

    // The cache's mark of the keyring's state (credential_cache.hpp).
    ReadMark read_mark() const { return cache_.read_mark(); }
    bool still_current(const ReadMark& mark) const { return cache_.still_current(mark); }
    void stop() { cache_.stop(); }

    // KeyringEvents, for the cache.
    void keyring_changed() override { cache_.keyring_changed(); }
    void keyring_watched(bool watched) override { cache_.keyring_watched(watched); }

  private:
    Clock clock_;
    CredentialCache cache_;
    TokenLifecycle lifecycle_;
};

}  // namespace hostkeeper::daemon::credentials
