#pragma once
// Credentials for a host: served from a TTL cache in front of the keyring.
// Keyring calls run on a worker executor, so the event loop never blocks on
// D-Bus; concurrent misses for one host share one keyring lookup; store and
// forget write through to the keyring first and only then touch the cache.
// The cache follows the keyring: a keyring event (lock, edit, restart) drops
// it at once, and while the keyring is not watched nothing is cached.
// Credentials from `hostkeeper login` with a refresh token are refreshed
// ahead of their expiry (login_credentials.hpp): a get in the last tenth of
// the lifetime starts a refresh in the background and is answered with the
// current token; a get at or after the expiry waits for the refresh. One
// refresh per host at a time; after a failure none is tried for a minute.

#include <boost/asio/any_io_executor.hpp>
#include <boost/asio/awaitable.hpp>
#include <boost/asio/steady_timer.hpp>
#include <chrono>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <unordered_map>
#include <utility>

#include "daemon/async/purge_timer.hpp"
#include "daemon/async/single_flight.hpp"
#include "daemon/cache/ttl_cache.hpp"
#include "daemon/credentials/command_tokens.hpp"
#include "daemon/credentials/credential_cache_options.hpp"
#include "daemon/credentials/keyring.hpp"
#include "daemon/credentials/keyring_events.hpp"
#include "daemon/credentials/login_credentials.hpp"
#include "daemon/credentials/token_standing.hpp"
#include "proto/secret.hpp"

namespace hostkeeper::daemon::credentials {

struct CredentialStats {
    std::size_t entries = 0;
    std::size_t positive = 0;
    std::size_t negative = 0;
    std::uint64_t hits = 0;
    std::uint64_t misses = 0;
    std::uint64_t keyring_lookups = 0;
    std::uint64_t evictions = 0;
    bool keyring_watched = true;      // false: keyring changes cannot be seen, so nothing is cached
    std::uint64_t invalidations = 0;  // caches dropped because the keyring changed
    std::map<std::string, TokenRejection> rejected;       // host -> the last refusal of its token
    std::map<std::string, WallTime> expiries;             // host -> its token's expires_at, as read
    std::map<std::string, ExpiryAdvice> expiry_advice;    // host -> the warning due, what renews it
    std::map<std::string, CommandTokenState> commands;    // hosts with a token_command
    std::map<std::string, std::string> refresh_failures;  // host -> why its last refresh failed
    std::chrono::steady_clock::time_point now;            // the service's clock when this was made
    WallTime wall_now;                                    // and the wall clock's
};

class CredentialService final : public KeyringEvents {
  public:
    using Clock = std::function<std::chrono::steady_clock::time_point()>;
    using WallClock = TokenStanding::WallClock;

    // `io`: the event loop's executor. `worker`: where keyring calls run.
    // `wall_clock`: what stored expiries (expires_at) are compared with.
    CredentialService(boost::asio::any_io_executor io, boost::asio::any_io_executor worker,
                      Keyring& keyring, const CredentialCacheOptions& options,
                      Clock clock = std::chrono::steady_clock::now,
                      WallClock wall_clock = std::chrono::system_clock::now);

    // Hosts with a token_command are answered by `commands` (its token, or
    // its error) instead of the keyring, for every consumer of get().
    void use_token_commands(CommandTokens& commands) { commands_ = &commands; }
    // Stored logins with a refresh token are refreshed through `refresher`.
    void use_token_refresher(TokenRefresher& refresher) { refresher_ = &refresher; }
    // The hosts whose tokens the daemon rotates (rotate = true): their expiry
    // is warned of only when the rotation is overdue (token_standing.hpp).
    void rotated_hosts(std::set<std::string> hosts) { rotated_ = std::move(hosts); }
    // Stages of expiry warned of are kept in `warned` (warned_stages.hpp).
    void remember_warnings(WarnedStages& warned) { standing_.remember_warnings(warned); }

    // Refreshes the host's stored login now. Throws proto::Error not_found
    // when it has none with a refresh token, login_failed when the
    // refresh failed (the message says why and what to run).
    boost::asio::awaitable<void> refresh(std::string host);
    bool has_token_command(const std::string& host) const {
        return commands_ != nullptr && commands_->has(host);
    }
    // Told of each warning stage a host's stored expiry enters, once per
    // host and stage (token_standing.hpp), on the event loop.
    void on_expiry_alert(TokenStanding::Alert alert) { standing_.on_alert(std::move(alert)); }

    // The host's credentials object (compact JSON text), or nullopt. Throws
    // proto::Error keyring_error for an item whose expires_at is not RFC 3339.
    boost::asio::awaitable<std::optional<proto::Secret>> get(std::string host);
    // What may be handed out: get()'s answer, unless the token is withheld
    // (refused, expired): nullopt then, and `why` (if given) says so.
    boost::asio::awaitable<std::optional<proto::Secret>> serve(std::string host,
                                                               std::optional<Withheld>* why);
    // Throws proto::Error bad_request for an expires_at that is not RFC 3339.
    boost::asio::awaitable<void> store(std::string host, proto::Secret credentials);
    boost::asio::awaitable<void> forget(std::string host);

    // Drops what is cached (all of it, or the host's): credentials read,
    // command tokens, and refusals of tokens (token_rejected). How many.
    std::size_t flush();
    std::size_t flush(const std::string& host);

    // A server refused the host's stored token (the daemon's own request):
    // remembered until the host's credentials are stored or forgotten,
    // token_accepted() (a `check` found it valid) or a flush. A token_command's token is
    // dropped instead: the next get runs the command.
    void token_rejected(const std::string& host, std::string url, long status);
    void token_accepted(const std::string& host);
    // Why the host's token is not handed out (refused, expired), or nullopt.
    std::optional<Withheld> withheld(const std::string& host) { return standing_.withheld(host); }
    // The host's stored token's expiry as its API says it (the stored object
    // has no expires_at): remembered in memory (TokenStanding::learned).
    void expiry_learned(const std::string& host, WallTime expires) {
        standing_.learned(host, expires);
    }
    // The host's token's expires_at, as last read or stored (or learned).
    std::optional<WallTime> expiry(const std::string& host) const { return standing_.expiry(host); }
    std::optional<ExpiryAdvice> expiry_advice(const std::string& host) const {
        return standing_.advice(host);
    }
    std::chrono::steady_clock::time_point now() const { return clock_(); }
    CredentialStats stats() const;

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
    void stop();

    // KeyringEvents: drop everything read before, so that a locked keyring
    // serves no token and an edited item is what the next get returns.
    void keyring_changed() override;
    void keyring_watched(bool watched) override;

  private:
    struct Cached {
        std::optional<proto::Secret> credentials;  // nullopt: "none for this host"
    };
    using Cache = cache::TtlCache<Cached>;

    struct RefreshFailure {
        std::string message;
        std::chrono::steady_clock::time_point when;
    };

    boost::asio::awaitable<std::optional<proto::Secret>> stored(std::string host);
    boost::asio::awaitable<std::optional<proto::Secret>> load(std::string host);
    // Who renews the host's token, as `credentials` and the configuration say.
    // `rotated_at`: the credentials' rotated_at (rotated_at_of()), read once by the caller.
    Renewal renewal_of(const std::string& host, const proto::Secret& credentials,
                       std::optional<WallTime> rotated_at) const;
    // `credentials`, or the refreshed ones when they are due (see above).
    boost::asio::awaitable<std::optional<proto::Secret>> kept_fresh(std::string host,
                                                                    proto::Secret credentials);
    // One refresh of the host's login shared by its callers: the new
    // credentials stored, or nullopt and the failure remembered.
    boost::asio::awaitable<std::optional<proto::Secret>> shared_refresh(std::string host,
                                                                        LoginRecord record);
    boost::asio::awaitable<std::optional<proto::Secret>> refresh_once(std::string host,
                                                                      LoginRecord record);
    bool refresh_held_back(const std::string& host) const;
    void remember(const std::string& host, std::optional<proto::Secret> credentials);

    boost::asio::any_io_executor io_;
    boost::asio::any_io_executor worker_;
    Keyring& keyring_;
    CredentialCacheOptions options_;
    Clock clock_;
    Cache cache_;
    async::SingleFlight<std::optional<proto::Secret>> flights_;
    std::uint64_t generation_ =
        0;  // bumped by every write and keyring event, so a slow lookup cannot cache an old answer
    bool watched_ = true;
    std::uint64_t invalidations_ = 0;
    std::uint64_t hits_ = 0;
    std::uint64_t misses_ = 0;
    std::uint64_t keyring_lookups_ = 0;
    TokenStanding standing_;
    async::PurgeTimer purge_timer_;
    CommandTokens* commands_ = nullptr;
    TokenRefresher* refresher_ = nullptr;
    std::set<std::string> rotated_;
    async::SingleFlight<std::optional<proto::Secret>> refreshes_;
    std::map<std::string, RefreshFailure> refresh_failures_;
    std::set<std::string> refreshing_hosts_;  // a background refresh runs
};

// A credentials object as found in the keyring, made into the compact JSON
// object hostkeeper serves: JSON objects pass through, a bare token (as a
// person may paste into `secret-tool store`) becomes {"token": "..."}.
// Throws proto::Error{keyring_error} for anything else.
proto::Secret credentials_from_keyring_text(const std::string& host, const proto::Secret& text);

}  // namespace hostkeeper::daemon::credentials
