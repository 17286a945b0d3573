#include "daemon/credentials/token_lifecycle.hpp"

#include <spdlog/spdlog.h>

#include <boost/asio/co_spawn.hpp>
#include <exception>
#include <memory>

#include "daemon/credentials/terraform_items.hpp"
#include "daemon/credentials/token_expiry.hpp"
#include "proto/error.hpp"

namespace hostkeeper::daemon::credentials {
namespace asio = boost::asio;
using proto::Error;
using proto::ErrorCode;
using proto::Secret;

namespace {

// After a failed refresh, none is tried for this long.
constexpr std::chrono::minutes kRefreshRetry{1};

// A refresher's answer, or why there is none.
struct Asked {
    std::optional<Secret> credentials;
    std::string failure;
};

// Its own coroutine: an await after a try block trips GCC bug 109224 (docs/DEVELOPMENT.md).
asio::awaitable<Asked> ask(TokenRefresher& refresher, std::string host, LoginRecord record) {
    Asked out;
    try {
        auto asking = refresher.refresh(std::move(host), std::move(record));  // named first
        out.credentials = co_await std::move(asking);
    } catch (const std::exception& e) {
        out.failure = e.what();
    }
    co_return out;
}

}  // namespace

TokenLifecycle::TokenLifecycle(asio::any_io_executor io, CredentialStore& store, Clock clock,
                               WallClock wall_clock)
    : io_(std::move(io)),
      store_(store),
      clock_(std::move(clock)),
      standing_(clock_, std::move(wall_clock)),
      refreshes_(io_) {}

asio::awaitable<std::optional<Secret>> TokenLifecycle::get(std::string host) {
    auto reading = stored(host);  // named first
    std::optional<Secret> credentials = co_await std::move(reading);
    if (!credentials || refresher_ == nullptr) co_return credentials;
    auto refreshing = kept_fresh(host, std::move(*credentials));  // named first
    co_return co_await std::move(refreshing);
}

asio::awaitable<std::optional<Secret>> TokenLifecycle::kept_fresh(std::string host,
                                                                  Secret credentials) {
    std::optional<LoginRecord> record = login_of(credentials);
    if (!record) co_return credentials;
    const std::optional<WallTime> expires =
        expiry_of(credentials, ErrorCode::keyring_error, "the keyring item for " + host);
    const WallTime now = standing_.wall_now();
    if (!expires || now < refresh_due(*expires, record->issued_at) || refresh_held_back(host))
        co_return credentials;
    if (now < *expires) {
        if (refreshing_hosts_.insert(host).second) {
            asio::co_spawn(io_, shared_refresh(host, std::move(*record)),
                           [this, host](const std::exception_ptr&, std::optional<Secret>) {
                               refreshing_hosts_.erase(host);
                           });
        }
        co_return credentials;
    }
    auto waiting = shared_refresh(host, std::move(*record));  // named first
    std::optional<Secret> fresh = co_await std::move(waiting);
    // Still nullopt: the expired token goes back, and serve() withholds it.
    if (fresh) co_return fresh;
    co_return credentials;
}

asio::awaitable<std::optional<Secret>> TokenLifecycle::shared_refresh(std::string host,
                                                                      LoginRecord record) {
    auto login = std::make_shared<LoginRecord>(std::move(record));
    auto work = [this, host, login] { return refresh_once(host, std::move(*login)); };
    auto shared = refreshes_.run(host, std::move(work), clone_optional);  // named first
    co_return co_await std::move(shared);
}

asio::awaitable<std::optional<Secret>> TokenLifecycle::refresh_once(std::string host,
                                                                    LoginRecord record) {
    auto asking = ask(*refresher_, host, std::move(record));  // named first
    Asked asked = co_await std::move(asking);
    if (!asked.credentials) {
        spdlog::warn("{}; run hostkeeper login {}", asked.failure, host);
        refresh_failures_[host] = {std::move(asked.failure), clock_()};
        co_return std::nullopt;
    }
    auto storing = store(host, asked.credentials->clone());  // named first
    co_await std::move(storing);
    spdlog::info("refreshed the token of {}", host);
    co_return std::move(asked.credentials);
}

bool TokenLifecycle::refresh_held_back(const std::string& host) const {
    const auto failed = refresh_failures_.find(host);
    return failed != refresh_failures_.end() && clock_() - failed->second.when < kRefreshRetry;
}

asio::awaitable<void> TokenLifecycle::refresh(std::string host) {
    auto reading = stored(host);  // named first
    const std::optional<Secret> credentials = co_await std::move(reading);
    std::optional<LoginRecord> record = credentials ? login_of(*credentials) : std::nullopt;
    if (!record || refresher_ == nullptr)
        throw Error(ErrorCode::not_found, "no login with a refresh token is stored for " + host +
                                              ": run hostkeeper login " + host);
    auto waiting = shared_refresh(host, std::move(*record));  // named first
    const std::optional<Secret> fresh = co_await std::move(waiting);
    if (!fresh) {
        const auto failed = refresh_failures_.find(host);
        throw Error(ErrorCode::login_failed, (failed != refresh_failures_.end()
                                                  ? failed->second.message
                                                  : "refreshing the token of " + host + " failed") +
                                                 "; run hostkeeper login " + host);
    }
}

// The stored credentials: a token_command's, or the store's.
asio::awaitable<std::optional<Secret>> TokenLifecycle::stored(std::string host) {
    if (commands_ != nullptr && commands_->has(host)) {
        auto fetching = commands_->get(host);  // named first
        co_return co_await std::move(fetching);
    }
    auto reading = store_.read(std::move(host));  // named first
    co_return co_await std::move(reading);
}

asio::awaitable<std::optional<Secret>> TokenLifecycle::serve(std::string host,
                                                             std::optional<Withheld>* why) {
    auto reading = get(host);  // named first
    std::optional<Secret> credentials = co_await std::move(reading);
    if (!credentials) co_return credentials;
    std::optional<Withheld> withheld = standing_.withheld(host);
    if (!withheld) co_return served(std::move(*credentials));
    if (const auto failed = refresh_failures_.find(host);
        failed != refresh_failures_.end() && withheld->reason == Withheld::Reason::expired)
        withheld->message = "the stored token expired, and " + failed->second.message +
                            "; run hostkeeper login " + host;
    if (why != nullptr) *why = std::move(withheld);
    co_return std::nullopt;
}

asio::awaitable<std::optional<Secret>> TokenLifecycle::bearer_token(std::string host,
                                                                    std::string purpose,
                                                                    std::string* problem,
                                                                    bool send_refused) {
    if (std::optional<Secret> token = run_tokens_.token(host)) co_return token;
    auto looking_up = stored_bearer(std::move(host), std::move(purpose), problem,
                                    send_refused);  // named first
    co_return co_await std::move(looking_up);
}

asio::awaitable<std::optional<Secret>> TokenLifecycle::stored_bearer(std::string host,
                                                                     std::string purpose,
                                                                     std::string* problem,
                                                                     bool send_refused) {
    try {
        auto reading = get(host);  // named first
        const std::optional<Secret> credentials = co_await std::move(reading);
        if (!credentials) co_return std::nullopt;
        if (const auto withheld = standing_.withheld(host);
            withheld && !(send_refused && withheld->reason == Withheld::Reason::refused)) {
            spdlog::debug("{}: going without the token of {}: {}", purpose, host,
                          withheld->message);
            co_return std::nullopt;
        }
        co_return token_of(*credentials);
    } catch (const std::exception& e) {
        spdlog::warn("{}: not sending the credentials of {}: {}", purpose, host, e.what());
        if (problem != nullptr) *problem = e.what();
    }
    co_return std::nullopt;
}

asio::awaitable<BearerAnswer> TokenLifecycle::check_bearer(std::string host,
                                                           std::string_view authorization,
                                                           std::string purpose) {
    BearerAnswer answer;
    // A run's token: any run's for the host will do (all are this user's).
    if (run_tokens_.carries(host, authorization)) {
        answer.match = BearerAnswer::Match::current;
        co_return answer;
    }
    const bool run_held = run_tokens_.holds(host);
    auto looking_up = stored_bearer(std::move(host), std::move(purpose), &answer.problem,
                                    false);  // named first
    const std::optional<Secret> token = co_await std::move(looking_up);
    if (token) {
        answer.match = is_bearer_of(authorization, *token) ? BearerAnswer::Match::current
                                                           : BearerAnswer::Match::other;
    }
    if (run_held && answer.match == BearerAnswer::Match::no_token) {
        answer.match = BearerAnswer::Match::other;  // it must carry a run's token
        answer.problem.clear();
    }
    co_return answer;
}

void TokenLifecycle::keyring_read(const std::string& host, const std::optional<Secret>& read,
                                  bool current) {
    const std::optional<WallTime> expires =
        read ? expiry_of(*read, ErrorCode::keyring_error, "the keyring item for " + host)
             : std::nullopt;
    if (!current) return;
    if (read) {
        const std::optional<WallTime> rotated_at = rotated_at_of(*read);
        standing_.read(host, expires, renewal_of(host, *read, rotated_at), rotated_at);
    } else {
        standing_.read(host, expires);
    }
}

Renewal TokenLifecycle::renewal_of(const std::string& host, const Secret& credentials,
                                   std::optional<WallTime> rotated_at) const {
    if (refresher_ != nullptr && login_of(credentials)) return Renewal::login;
    if (rotated_.contains(host)) return Renewal::rotation;
    if (rotated_at) return Renewal::rotated;
    return Renewal::person;
}

asio::awaitable<void> TokenLifecycle::store(std::string host, Secret credentials) {
    const std::optional<WallTime> expires =
        expiry_of(credentials, ErrorCode::bad_request,
                  "the credentials for " + host + "; nothing was stored");
    auto writing = store_.write(host, credentials.clone());  // named first
    co_await std::move(writing);
    const std::optional<WallTime> rotated_at = rotated_at_of(credentials);
    standing_.stored(host, expires, renewal_of(host, credentials, rotated_at), rotated_at);
    refresh_failures_.erase(host);
}

asio::awaitable<void> TokenLifecycle::forget(std::string host) {
    auto removing = store_.remove(host);  // named first
    co_await std::move(removing);
    standing_.forgotten(host);
    refresh_failures_.erase(host);
}

std::size_t TokenLifecycle::flush() {
    const std::size_t refusals = standing_.forget_refusals();
    return refusals + (commands_ != nullptr ? commands_->flush() : 0);
}

std::size_t TokenLifecycle::flush(const std::string& host) {
    const std::size_t commands = commands_ != nullptr ? commands_->flush(host) : 0;
    const std::size_t refusals = standing_.rejections().contains(host) ? 1 : 0;
    standing_.accepted(host);
    return refusals + commands;
}

void TokenLifecycle::token_rejected(const std::string& host, std::string url, long status) {
    // A command's token is not withheld: the next get runs the command for a new one.
    if (commands_ != nullptr && commands_->has(host)) {
        commands_->flush(host);
        return;
    }
    standing_.rejected(host, std::move(url), status);
}

LifecycleStats TokenLifecycle::stats() const {
    LifecycleStats s;
    s.rejected = standing_.rejections();
    s.expiries = standing_.expiries();
    for (const auto& [host, at] : s.expiries) {
        if (std::optional<ExpiryAdvice> advice = standing_.advice(host))
            s.expiry_advice.emplace(host, std::move(*advice));
    }
    if (commands_ != nullptr) s.commands = commands_->states();
    for (const auto& [host, failed] : refresh_failures_)
        s.refresh_failures.emplace(host, failed.message);
    s.wall_now = standing_.wall_now();
    return s;
}

}  // namespace hostkeeper::daemon::credentials
