#pragma once
// Credentials for a host: the token life cycle (token_lifecycle.hpp: what is
// handed out or withheld, expiry warnings, token commands, login refresh,
// rotation) over the read-through cache in front of the keyring
// (credential_cache.hpp: keyring reads with a TTL, dropped on keyring
// events). This class puts the two together for the daemon's consumers;
// each can be used and tested alone.

#include <boost/asio/any_io_executor.hpp>
#include <boost/asio/awaitable.hpp>
#include <chrono>
#include <functional>
#include <optional>
#include <set>
#include <string>
#include <utility>

#include "daemon/credentials/bearer_check.hpp"
#include "daemon/credentials/credential_cache.hpp"
#include "daemon/credentials/credential_cache_options.hpp"
#include "daemon/credentials/keyring.hpp"
#include "daemon/credentials/keyring_events.hpp"
#include "daemon/credentials/token_lifecycle.hpp"
#include "proto/secret.hpp"

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

    // The life cycle's settings and answers (token_lifecycle.hpp).
    void use_token_commands(CommandTokens& commands) { lifecycle_.use_token_commands(commands); }
    void use_token_refresher(TokenRefresher& refresher) {
        lifecycle_.use_token_refresher(refresher);
    }
    void rotated_hosts(std::set<std::string> hosts) { lifecycle_.rotated_hosts(std::move(hosts)); }
    // Stages of expiry warned of are kept in `warned` (warned_stages.hpp).
    void remember_warnings(WarnedStages& warned) { lifecycle_.remember_warnings(warned); }
    // Told of each warning stage a host's stored expiry enters, once per
    // host and stage (token_standing.hpp), on the event loop.
    void on_expiry_alert(TokenStanding::Alert alert) {
        lifecycle_.on_expiry_alert(std::move(alert));
    }
    boost::asio::awaitable<void> refresh(std::string host) {
        return lifecycle_.refresh(std::move(host));
    }
    bool has_token_command(const std::string& host) const {
        return lifecycle_.has_token_command(host);
    }
    boost::asio::awaitable<std::optional<proto::Secret>> get(std::string host) {
        return lifecycle_.get(std::move(host));
    }
    boost::asio::awaitable<std::optional<proto::Secret>> serve(std::string host,
                                                               std::optional<Withheld>* why) {
        return lifecycle_.serve(std::move(host), why);
    }
    boost::asio::awaitable<std::optional<proto::Secret>> bearer_token(std::string host,
                                                                      std::string purpose,
                                                                      std::string* problem,
                                                                      bool send_refused) {
        return lifecycle_.bearer_token(std::move(host), std::move(purpose), problem, send_refused);
    }
    // The registry cache's one question (bearer_check.hpp), asked of the
    // life cycle itself.
    BearerCheck& bearer_check() { return lifecycle_; }
    RunTokens& run_tokens() { return lifecycle_.run_tokens(); }
    boost::asio::awaitable<void> store(std::string host, proto::Secret credentials) {
        return lifecycle_.store(std::move(host), std::move(credentials));
    }
    boost::asio::awaitable<void> forget(std::string host) {
        return lifecycle_.forget(std::move(host));
    }
    void token_rejected(const std::string& host, std::string url, long status) {
        lifecycle_.token_rejected(host, std::move(url), status);
    }
    void token_accepted(const std::string& host) { lifecycle_.token_accepted(host); }
    std::optional<Withheld> withheld(const std::string& host) { return lifecycle_.withheld(host); }
    void expiry_learned(const std::string& host, WallTime expires) {
        lifecycle_.expiry_learned(host, expires);
    }
    std::optional<WallTime> expiry(const std::string& host) const {
        return lifecycle_.expiry(host);
    }
    std::optional<ExpiryAdvice> expiry_advice(const std::string& host) const {
        return lifecycle_.expiry_advice(host);
    }

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
