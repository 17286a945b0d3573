#include "daemon/credentials/credential_service.hpp"

#include <spdlog/spdlog.h>

#include <boost/asio/co_spawn.hpp>
#include <boost/asio/redirect_error.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <exception>

#include "daemon/async/on_worker.hpp"
#include "daemon/credentials/terraform_items.hpp"
#include "daemon/credentials/token_expiry.hpp"
#include "proto/error.hpp"
#include "proto/json.hpp"
#include "proto/messages.hpp"

namespace hostkeeper::daemon::credentials {
namespace asio = boost::asio;
using proto::Error;
using proto::ErrorCode;
using proto::Secret;
using steady = std::chrono::steady_clock;

namespace {

std::optional<Secret> clone_optional(const std::optional<Secret>& secret) {
    if (!secret) return std::nullopt;
    return secret->clone();
}

// After a failed refresh, none is tried for this long.
constexpr std::chrono::minutes kRefreshRetry{1};

// A refresher's answer, or why there is none.
struct Asked {
    std::optional<Secret> credentials;
    std::string failure;
};

// Its own coroutine: an await after a try block trips GCC bug 109224 (async/toolchain.hpp).
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

Secret credentials_from_keyring_text(const std::string& host, const Secret& text) {
    proto::Json object;
    try {
        object = proto::parse_json(text.view());
    } catch (const proto::JsonError& e) {
        // Not JSON at all may still be a bare token (below); nested too deeply is not.
        if (!text.view().empty() && (text.view().front() == '{' || text.view().front() == '[')) {
            throw Error(ErrorCode::keyring_error,
                        "the keyring item for " + host + " is " + e.what() +
                            "; store it again (terraform login " + host + ")");
        }
    }
    const proto::ScrubGuard guard(object);
    if (object.is_object()) {
        proto::validate_credentials(object);
        std::string compact = object.dump();
        if (compact.size() > proto::kMaxCredentialsSize) {
            proto::scrub(compact);
            throw Error(ErrorCode::keyring_error, "the keyring item for " + host + " is over " +
                                                      std::to_string(proto::kMaxCredentialsSize) +
                                                      " bytes");
        }
        return Secret::adopt(compact);
    }
    const std::string_view raw = text.view();
    const bool bare_token = !raw.empty() && raw.size() <= proto::kMaxCredentialsSize &&
                            raw.find_first_of(" \t\r\n\"\\{}") == std::string_view::npos;
    if (!bare_token) {
        throw Error(ErrorCode::keyring_error,
                    "the keyring item for " + host +
                        " holds neither a JSON object nor a bare token; store "
                        "it again (terraform login " +
                        host + ")");
    }
    proto::Json wrapped = {{"token", std::string(raw)}};
    const proto::ScrubGuard wrapped_guard(wrapped);
    std::string compact = wrapped.dump();
    return Secret::adopt(compact);
}

CredentialService::CredentialService(asio::any_io_executor io, asio::any_io_executor worker,
                                     Keyring& keyring, const CredentialCacheOptions& options,
                                     Clock clock, WallClock wall_clock)
    : io_(std::move(io)),
      worker_(std::move(worker)),
      keyring_(keyring),
      options_(options),
      clock_(std::move(clock)),
      cache_(options.max_entries),
      flights_(io_),
      standing_(clock_, std::move(wall_clock)),
      purge_timer_(io_, clock_,
                   [this] {
                       cache_.purge(clock_());
                       return cache_.next_expiry();
                   }),
      refreshes_(io_) {}

asio::awaitable<std::optional<Secret>> CredentialService::get(std::string host) {
    auto reading = stored(host);  // named first (async/toolchain.hpp)
    std::optional<Secret> credentials = co_await std::move(reading);
    if (!credentials || refresher_ == nullptr) co_return credentials;
    auto refreshing = kept_fresh(host, std::move(*credentials));  // named first
    co_return co_await std::move(refreshing);
}

asio::awaitable<std::optional<Secret>> CredentialService::kept_fresh(std::string host,
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

asio::awaitable<std::optional<Secret>> CredentialService::shared_refresh(std::string host,
                                                                         LoginRecord record) {
    auto login = std::make_shared<LoginRecord>(std::move(record));
    auto work = [this, host, login] { return refresh_once(host, std::move(*login)); };
    auto shared = refreshes_.run(host, std::move(work), clone_optional);  // named first
    co_return co_await std::move(shared);
}

asio::awaitable<std::optional<Secret>> CredentialService::refresh_once(std::string host,
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

bool CredentialService::refresh_held_back(const std::string& host) const {
    const auto failed = refresh_failures_.find(host);
    return failed != refresh_failures_.end() && clock_() - failed->second.when < kRefreshRetry;
}

asio::awaitable<void> CredentialService::refresh(std::string host) {
    auto reading = stored(host);  // named first (async/toolchain.hpp)
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

// The stored credentials: a token_command's, or the cache's, or the keyring's.
asio::awaitable<std::optional<Secret>> CredentialService::stored(std::string host) {
    if (commands_ != nullptr && commands_->has(host)) {
        auto fetching = commands_->get(host);  // named first (async/toolchain.hpp)
        co_return co_await std::move(fetching);
    }
    if (Cached* cached = cache_.find(host, clock_())) {
        ++hits_;
        co_return clone_optional(cached->credentials);
    }
    ++misses_;
    // Named first (async/toolchain.hpp).
    auto work = [this, host] { return load(host); };
    // A lookup started before a keyring event (a lock, an edit) is not shared
    // with a get that comes after it: that one asks the keyring itself.
    const std::string flight = host + '\0' + std::to_string(generation_);
    auto shared = flights_.run(flight, std::move(work), clone_optional);
    co_return co_await std::move(shared);
}

asio::awaitable<std::optional<Secret>> CredentialService::serve(std::string host,
                                                                std::optional<Withheld>* why) {
    auto reading = get(host);  // named first (async/toolchain.hpp)
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

// One keyring lookup, cached unless a write happened meanwhile.
asio::awaitable<std::optional<Secret>> CredentialService::load(std::string host) {
    const std::uint64_t generation = generation_;
    ++keyring_lookups_;
    // Named first (async/toolchain.hpp).
    auto lookup = [this, host]() -> std::optional<Secret> {
        std::optional<Secret> text = TerraformItems(keyring_).lookup(host);
        if (!text) return std::nullopt;
        return credentials_from_keyring_text(host, *text);
    };
    std::optional<Secret> result = co_await async::on_worker(worker_, std::move(lookup));
    const std::optional<WallTime> expires =
        result ? expiry_of(*result, ErrorCode::keyring_error, "the keyring item for " + host)
               : std::nullopt;
    if (generation == generation_) {
        if (result) {
            const std::optional<WallTime> rotated_at = rotated_at_of(*result);
            standing_.read(host, expires, renewal_of(host, *result, rotated_at), rotated_at);
        } else {
            standing_.read(host, expires);
        }
        remember(host, clone_optional(result));
    }
    co_return result;
}

Renewal CredentialService::renewal_of(const std::string& host, const Secret& credentials,
                                      std::optional<WallTime> rotated_at) const {
    if (refresher_ != nullptr && login_of(credentials)) return Renewal::login;
    if (rotated_.contains(host)) return Renewal::rotation;
    if (rotated_at) return Renewal::rotated;
    return Renewal::person;
}

asio::awaitable<void> CredentialService::store(std::string host, Secret credentials) {
    const std::optional<WallTime> expires =
        expiry_of(credentials, ErrorCode::bad_request,
                  "the credentials for " + host + "; nothing was stored");
    const std::uint64_t generation = generation_;
    auto write = [this, host, copy = credentials.clone()]() {
        TerraformItems(keyring_).store(host, copy);
    };
    co_await async::on_worker(worker_, std::move(write));
    // A keyring event (a lock) or another write meanwhile: keep nothing; the
    // next get reads the keyring.
    const std::optional<WallTime> rotated_at = rotated_at_of(credentials);
    standing_.stored(host, expires, renewal_of(host, credentials, rotated_at), rotated_at);
    refresh_failures_.erase(host);
    const bool undisturbed = generation == generation_;
    ++generation_;
    if (undisturbed) {
        remember(host, std::move(credentials));
    } else {
        cache_.erase(host);
    }
}

asio::awaitable<void> CredentialService::forget(std::string host) {
    auto remove = [this, host]() { (void)TerraformItems(keyring_).remove(host); };
    const std::uint64_t generation = generation_;
    co_await async::on_worker(worker_, std::move(remove));
    standing_.forgotten(host);
    refresh_failures_.erase(host);
    const bool undisturbed = generation == generation_;
    ++generation_;
    if (undisturbed) {
        remember(host, std::nullopt);
    } else {
        cache_.erase(host);
    }
}

void CredentialService::remember(const std::string& host, std::optional<Secret> credentials) {
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

std::size_t CredentialService::flush() {
    ++generation_;
    const std::size_t refusals = standing_.forget_refusals();
    return cache_.clear() + refusals + (commands_ != nullptr ? commands_->flush() : 0);
}

std::size_t CredentialService::flush(const std::string& host) {
    ++generation_;
    const std::size_t commands = commands_ != nullptr ? commands_->flush(host) : 0;
    const std::size_t refusals = standing_.rejections().contains(host) ? 1 : 0;
    standing_.accepted(host);
    return (cache_.erase(host) ? 1 : 0) + refusals + commands;
}

void CredentialService::token_rejected(const std::string& host, std::string url, long status) {
    // A command's token is not withheld: the next get runs the command for a new one.
    if (commands_ != nullptr && commands_->has(host)) {
        commands_->flush(host);
        return;
    }
    standing_.rejected(host, std::move(url), status);
}

void CredentialService::token_accepted(const std::string& host) {
    standing_.accepted(host);
}

CredentialStats CredentialService::stats() const {
    CredentialStats s;
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
    s.rejected = standing_.rejections();
    s.expiries = standing_.expiries();
    for (const auto& [host, at] : s.expiries) {
        if (std::optional<ExpiryAdvice> advice = standing_.advice(host))
            s.expiry_advice.emplace(host, std::move(*advice));
    }
    if (commands_ != nullptr) s.commands = commands_->states();
    for (const auto& [host, failed] : refresh_failures_)
        s.refresh_failures.emplace(host, failed.message);
    s.now = clock_();
    s.wall_now = standing_.wall_now();
    return s;
}

bool CredentialService::still_current(const ReadMark& mark) const {
    return mark.watched && watched_ && mark.generation == generation_ &&
           clock_() - mark.at < options_.ttl;
}

void CredentialService::keyring_changed() {
    ++generation_;
    ++invalidations_;
    cache_.clear();
}

void CredentialService::keyring_watched(bool watched) {
    // Only a change matters: a repeated report must not drop what was cached
    // while the watch stood.
    if (watched == watched_) return;
    ++generation_;
    watched_ = watched;
    cache_.clear();
}

void CredentialService::stop() {
    purge_timer_.stop();
}

}  // namespace hostkeeper::daemon::credentials
