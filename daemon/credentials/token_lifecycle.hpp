#pragma once
// The life cycle of hosts' tokens, over a credential store (the cache in
// front of the keyring): what is handed out and what is withheld (refused,
// expired: token_standing.hpp), warnings of expiry, tokens from commands
// (command_tokens.hpp), who renews a token (rotation, login refresh).
// Credentials from `hostkeeper login` with a refresh token are refreshed
// ahead of their expiry (login_credentials.hpp): a get in the last tenth of
// the lifetime starts a refresh in the background and is answered with the
// current token; a get at or after the expiry waits for the refresh. One
// refresh per host at a time; after a failure none is tried for a minute.

#include <boost/asio/any_io_executor.hpp>
#include <boost/asio/awaitable.hpp>
#include <chrono>
#include <functional>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <utility>

#include "daemon/async/single_flight.hpp"
#include "daemon/credentials/bearer_check.hpp"
#include "daemon/credentials/command_tokens.hpp"
#include "daemon/credentials/credential_store.hpp"
#include "daemon/credentials/login_credentials.hpp"
#include "daemon/credentials/run_tokens.hpp"
#include "daemon/credentials/token_standing.hpp"
#include "proto/secret.hpp"

namespace hostkeeper::daemon::credentials {

struct LifecycleStats {
    std::map<std::string, TokenRejection> rejected;       // host -> the last refusal of its token
    std::map<std::string, WallTime> expiries;             // host -> its token's expires_at, as read
    std::map<std::string, ExpiryAdvice> expiry_advice;    // host -> the warning due, what renews it
    std::map<std::string, CommandTokenState> commands;    // hosts with a token_command
    std::map<std::string, std::string> refresh_failures;  // host -> why its last refresh failed
    WallTime wall_now;                                    // the wall clock when this was made
};

class TokenLifecycle final : public BearerCheck {
  public:
    using Clock = std::function<std::chrono::steady_clock::time_point()>;
    using WallClock = TokenStanding::WallClock;

    // `io`: the event loop's executor (background refreshes run there).
    // `wall_clock`: what stored expiries (expires_at) are compared with.
    TokenLifecycle(boost::asio::any_io_executor io, CredentialStore& store, Clock clock,
                   WallClock wall_clock);

    // Hosts with a token_command are answered by `commands` (its token, or
    // its error) instead of the store, for every consumer of get().
    void use_token_commands(CommandTokens& commands) { commands_ = &commands; }
    // Stored logins with a refresh token are refreshed through `refresher`.
    void use_token_refresher(TokenRefresher& refresher) { refresher_ = &refresher; }
    // The hosts whose tokens the daemon rotates (rotate = true): their expiry
    // is warned of only when the rotation is overdue (token_standing.hpp).
    void rotated_hosts(std::set<std::string> hosts) { rotated_ = std::move(hosts); }
    void remember_warnings(WarnedStages& warned) { standing_.remember_warnings(warned); }
    void on_expiry_alert(TokenStanding::Alert alert) { standing_.on_alert(std::move(alert)); }
    bool has_token_command(const std::string& host) const {
        return commands_ != nullptr && commands_->has(host);
    }
    // The token commands given to use_token_commands (nullptr: none).
    CommandTokens* token_commands() const { return commands_; }

    // Refreshes the host's stored login now. Throws proto::Error not_found
    // when it has none with a refresh token, login_failed when the
    // refresh failed (the message says why and what to run).
    boost::asio::awaitable<void> refresh(std::string host);

    // The host's credentials object (compact JSON text), or nullopt. Throws
    // proto::Error keyring_error for an item whose expires_at is not RFC 3339.
    boost::asio::awaitable<std::optional<proto::Secret>> get(std::string host);
    // What may be handed out: get()'s answer, unless the token is withheld
    // (refused, expired): nullopt then, and `why` (if given) says so.
    boost::asio::awaitable<std::optional<proto::Secret>> serve(std::string host,
                                                               std::optional<Withheld>* why);
    // A run's token for the host (RunTokens), else the token of get()'s
    // answer, as Terraform sends it; nullopt for none or
    // a withheld one (with `send_refused`, a refused one is given all the
    // same). When the store cannot say, nullopt too, and `problem` (if
    // given) says why. `purpose` is for the log.
    boost::asio::awaitable<std::optional<proto::Secret>> bearer_token(std::string host,
                                                                      std::string purpose,
                                                                      std::string* problem,
                                                                      bool send_refused);
    // BearerCheck's question, of bearer_token()'s answer.
    boost::asio::awaitable<BearerAnswer> check_bearer(std::string host,
                                                      std::string_view authorization,
                                                      std::string purpose) override;
    // Throws proto::Error bad_request for an expires_at that is not RFC 3339.
    boost::asio::awaitable<void> store(std::string host, proto::Secret credentials);
    boost::asio::awaitable<void> forget(std::string host);

    // A keyring read of the store (CredentialCache::ReadCheck): its expiry
    // and who renews it are noted when `current`. Throws proto::Error
    // keyring_error for an expires_at that is not RFC 3339.
    void keyring_read(const std::string& host, const std::optional<proto::Secret>& read,
                      bool current);

    // Drops command tokens and refusals of tokens (all, or the host's). How many.
    std::size_t flush();
    std::size_t flush(const std::string& host);

    // A server refused the host's stored token (the daemon's own request):
    // remembered until the host's credentials are stored or forgotten,
    // token_accepted() (a `check` found it valid) or a flush. A token_command's
    // token is dropped instead: the next get runs the command.
    void token_rejected(const std::string& host, std::string url, long status);
    void token_accepted(const std::string& host) { standing_.accepted(host); }
    std::optional<Withheld> withheld(const std::string& host) { return standing_.withheld(host); }
    void expiry_learned(const std::string& host, WallTime expires) {
        standing_.learned(host, expires);
    }
    std::optional<WallTime> expiry(const std::string& host) const { return standing_.expiry(host); }
    std::optional<ExpiryAdvice> expiry_advice(const std::string& host) const {
        return standing_.advice(host);
    }
    LifecycleStats stats() const;

    // The tokens runs brought: first for their hosts in bearer_token().
    RunTokens& run_tokens() { return run_tokens_; }

  private:
    // bearer_token() without the runs' tokens: the command's or the keyring's.
    boost::asio::awaitable<std::optional<proto::Secret>> stored_bearer(std::string host,
                                                                       std::string purpose,
                                                                       std::string* problem,
                                                                       bool send_refused);
    struct RefreshFailure {
        std::string message;
        std::chrono::steady_clock::time_point when;
    };

    boost::asio::awaitable<std::optional<proto::Secret>> stored(std::string host);
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

    boost::asio::any_io_executor io_;
    CredentialStore& store_;
    Clock clock_;
    TokenStanding standing_;
    CommandTokens* commands_ = nullptr;
    TokenRefresher* refresher_ = nullptr;
    std::set<std::string> rotated_;
    async::SingleFlight<std::optional<proto::Secret>> refreshes_;
    std::map<std::string, RefreshFailure> refresh_failures_;
    std::set<std::string> refreshing_hosts_;  // a background refresh runs
    RunTokens run_tokens_;
};

}  // namespace hostkeeper::daemon::credentials
