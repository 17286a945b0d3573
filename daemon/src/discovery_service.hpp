#pragma once
// Remote service discovery for every tool of the user: one TTL-cached answer
// per host, computed as Terraform's own client would. Fresh answers come from
// the cache; concurrent lookups of a cold host share one request upstream;
// failures are remembered briefly (Retry-After honoured) and, within the
// stale-if-error limit, answered with the last good document.

#include <utility>  // before Asio: boost 1.74 awaitable.hpp uses std::exchange unincluded
#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <unordered_map>

#include <boost/asio/any_io_executor.hpp>
#include <boost/asio/awaitable.hpp>

#include "credential_service.hpp"
#include "discovery_document.hpp"
#include "discovery_options.hpp"
#include "http_client.hpp"
#include "hostkeeper/proto/error.hpp"
#include "purge_timer.hpp"
#include "single_flight.hpp"
#include "ttl_cache.hpp"

namespace hostkeeper::daemon {

enum class DiscoverySource { network, cache, stale, forced };
std::string_view to_string(DiscoverySource source) noexcept;

// A host's services as fetched (or forced): immutable, shared by the cache
// entry and every answer made from it, with its JSON made once.
struct DiscoveryDocument {
    DiscoveryDocument(std::string url_, Services services_);
    std::string url;  // the final URL after redirects
    Services services;
    std::string json;  // "url":...,"services":{...}[,"invalid":{...}], for answers to splice in
};

struct DiscoveryAnswer {
    DiscoverySource source = DiscoverySource::network;
    std::shared_ptr<const DiscoveryDocument> document;
    const std::string& url() const { return document->url; }
    const Services& services() const { return document->services; }
    std::optional<std::chrono::seconds> age;         // since fetched (not for forced)
    std::optional<std::chrono::seconds> expires_in;  // fresh for this much longer (not for forced)
    std::string error;                               // why a stale answer is stale
};

// discovery_failed, plus whether it was a remembered failure and when the
// server will be asked again.
class DiscoveryError : public proto::Error {
public:
    DiscoveryError(const std::string& message, bool cached, std::chrono::seconds retry_in)
        : proto::Error(proto::ErrorCode::discovery_failed, message), cached_(cached), retry_in_(retry_in) {}
    bool cached() const noexcept { return cached_; }
    std::chrono::seconds retry_in() const noexcept { return retry_in_; }

private:
    bool cached_;
    std::chrono::seconds retry_in_;
};

struct DiscoveryStats {
    std::size_t entries = 0;
    std::size_t positive = 0;
    std::size_t empty = 0;
    std::size_t errors = 0;
    std::uint64_t hits = 0;
    std::uint64_t misses = 0;
    std::uint64_t stale = 0;
    std::uint64_t forced = 0;
    std::uint64_t upstream_requests = 0;
    std::uint64_t upstream_failures = 0;
    std::size_t in_flight = 0;
    std::size_t evictions = 0;
};

class DiscoveryService {
public:
    using Clock = std::function<std::chrono::steady_clock::time_point()>;

    // `credentials`: where bearer tokens for the hosts come from.
    DiscoveryService(boost::asio::any_io_executor io, HttpClient& http, CredentialService& credentials,
                     DiscoveryOptions options, Clock clock = std::chrono::steady_clock::now);

    // `host` is normalized. Throws DiscoveryError.
    boost::asio::awaitable<DiscoveryAnswer> discover(std::string host, bool refresh);

    std::size_t flush();
    std::size_t flush(const std::string& host);
    DiscoveryStats stats() const;
    void stop();

private:
    using time_point = std::chrono::steady_clock::time_point;
    struct Good {
        std::shared_ptr<const DiscoveryDocument> document;
        bool empty = false;  // a 404
        time_point fetched;
        time_point fresh_until;
    };
    struct Failure {
        std::string message;
        time_point retry_at;
    };
    struct Entry {
        std::optional<Good> good;
        std::optional<Failure> failure;
    };
    // What one fetch found out: a document or 404 (with its freshness), or why not.
    struct Fetched {
        std::optional<Good> good;
        bool store = true;  // false for no-store
        std::string error;
        std::optional<long long> retry_after;
    };
    using Cache = TtlCache<Entry>;

    boost::asio::awaitable<DiscoveryAnswer> refresh(std::string host);
    boost::asio::awaitable<Fetched> fetch(const std::string& host);
    // One response: the URL to follow next, or nullopt when `out` is settled.
    std::optional<std::string> judge(const HttpResponse& response, int redirects, std::set<std::string>& seen,
                                     Fetched& out);
    void fail(Fetched& out, const std::string& url, const std::string& why);
    boost::asio::awaitable<std::optional<proto::Secret>> token_for(const std::string& host);
    DiscoveryAnswer settle(const std::string& host, Fetched fetched, const Entry* previous);
    DiscoveryAnswer answer(const Good& good, DiscoverySource source, time_point now) const;
    bool usable_stale(const Good& good, time_point now) const;
    void keep(const std::string& host, Entry entry, time_point now);

    boost::asio::any_io_executor io_;
    HttpClient& http_;
    CredentialService& credentials_;
    DiscoveryOptions options_;
    Clock clock_;
    std::map<std::string, std::shared_ptr<const DiscoveryDocument>> forced_;
    Cache cache_;
    SingleFlight<DiscoveryAnswer> flights_;
    std::uint64_t hits_ = 0, misses_ = 0, stale_ = 0, forced_hits_ = 0, upstream_requests_ = 0,
                  upstream_failures_ = 0;
    PurgeTimer purge_timer_;
};

}  // namespace hostkeeper::daemon
