#pragma once
// Remote service discovery for every tool of the user: one answer per host,
// computed as Terraform's own client would, kept in an AnswerCache (fresh
// answers, single flight, remembered failures, stale-if-error).

#include <boost/asio/any_io_executor.hpp>
#include <boost/asio/awaitable.hpp>
#include <chrono>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <utility>

#include "daemon/cache/answer_cache.hpp"
#include "daemon/credentials/token_lifecycle.hpp"
#include "daemon/discovery/auto_rotation.hpp"
#include "daemon/discovery/discovery_document.hpp"
#include "daemon/discovery/discovery_options.hpp"
#include "daemon/discovery/login_service.hpp"
#include "daemon/discovery/token_check.hpp"
#include "daemon/discovery/token_rotation.hpp"
#include "daemon/http/http_client.hpp"
#include "daemon/upstream/upstream.hpp"
#include "proto/error.hpp"

namespace hostkeeper::daemon::discovery {

enum class DiscoverySource { network, cache, stale, forced };
std::string_view to_string(DiscoverySource source) noexcept;

struct DiscoveryAnswer {
    DiscoverySource source = DiscoverySource::network;
    std::shared_ptr<const DiscoveryDocument> document;
    const std::string& url() const { return document->url; }
    const Services& services() const { return document->services; }
    std::optional<std::chrono::seconds> age;         // since fetched (not for forced)
    std::optional<std::chrono::seconds> expires_in;  // fresh for this much longer (not for forced)
    std::string error;                               // why a stale answer is stale
};

class DiscoveryError : public cache::FetchFailure {
  public:
    DiscoveryError(const std::string& message, bool cached, std::chrono::seconds retry_in)
        : cache::FetchFailure(proto::ErrorCode::discovery_failed, message, cached, retry_in) {}
};

struct DiscoveryStats : upstream::UpstreamStats {
    std::uint64_t forced = 0;
};

class DiscoveryService {
  public:
    using Clock = cache::AnswerCache<DiscoveryDocument>::Clock;

    // `credentials`: where bearer tokens for the hosts come from.
    DiscoveryService(boost::asio::any_io_executor io, http::HttpClient& http,
                     credentials::TokenLifecycle& credentials, DiscoveryOptions options,
                     Clock clock = std::chrono::steady_clock::now);

    // `host` is normalized. Throws DiscoveryError.
    boost::asio::awaitable<DiscoveryAnswer> discover(std::string host, bool refresh);

    // Asks the host whether its stored token is still good, past the cache
    // (token_check.hpp). Throws proto::Error when the keyring cannot say.
    boost::asio::awaitable<TokenCheck> check_token(std::string host);
    // check_token() for the expiry it learns (the daemon's expiry watch):
    // the outcome is logged. Throws as check_token().
    boost::asio::awaitable<void> learn_expiry(std::string host);

    // Replaces the host's stored HCP Terraform / Terraform Enterprise user
    // token with a new one (token_rotation.hpp), the host's tfe.v2 found
    // by discover(). Throws proto::Error when the keyring cannot say. The
    // hosts configured with `rotate = true` are rotated in the background
    // (auto_rotation.hpp) until stop().
    boost::asio::awaitable<TokenRotation> rotate_token(std::string host);

    // `hostkeeper login`'s login.v1 client (login_service.hpp); also what
    // refreshes stored logins (TokenLifecycle::use_token_refresher).
    LoginService& login() { return login_; }

    std::size_t flush();
    std::size_t flush(const std::string& host);
    DiscoveryStats stats() const;
    void stop();

  private:
    using Cache = cache::AnswerCache<DiscoveryDocument>;

    boost::asio::awaitable<Cache::Fetched> fetch(std::string host);
    std::chrono::seconds rotate_lifetime(const std::string& host) const;
    Cache::Fetched settle(upstream::Verdict verdict);

    DiscoveryOptions options_;
    Cache::Clock clock_;
    std::map<std::string, std::shared_ptr<const DiscoveryDocument>> forced_;
    Cache cache_;
    credentials::TokenLifecycle& credentials_;
    http::HttpClient& http_;
    upstream::Upstream upstream_;
    std::uint64_t forced_hits_ = 0;
    LoginService login_;
    AutoRotation auto_rotation_;  // last: it calls rotate_token
};

}  // namespace hostkeeper::daemon::discovery
