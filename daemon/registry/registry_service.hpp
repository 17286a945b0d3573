#pragma once
// The module registry (modules.v1), provider registry (providers.v1) and
// provider network mirror clients: every answer computed as Terraform's own
// clients compute it, kept in an AnswerCache per document URL (fresh answers,
// single flight, remembered failures, stale-if-error), and authenticated
// with the keyring's credentials for the registry's user-facing hostname (for
// a mirror: the mirror's host and port), sent to that origin only.

#include <boost/asio/any_io_executor.hpp>
#include <boost/asio/awaitable.hpp>
#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "daemon/cache/answer_cache.hpp"
#include "daemon/credentials/token_lifecycle.hpp"
#include "daemon/discovery/discovery_service.hpp"
#include "daemon/http/http_client.hpp"
#include "daemon/registry/mirror.hpp"
#include "daemon/registry/package_fetch.hpp"
#include "daemon/registry/registry_documents.hpp"
#include "daemon/registry/registry_options.hpp"
#include "daemon/upstream/upstream.hpp"
#include "proto/error.hpp"
#include "proto/messages.hpp"
#include "proto/registry_address.hpp"
#include "proto/semver.hpp"

namespace hostkeeper::daemon::registry {

struct RegistryAnswer {
    cache::AnswerSource source = cache::AnswerSource::network;
    std::shared_ptr<const RegistryDocument> document;
    std::chrono::seconds age{0};
    std::chrono::seconds expires_in{0};
    std::string error;  // why a stale answer is stale
};

class RegistryError : public cache::FetchFailure {
  public:
    RegistryError(const std::string& message, bool cached, std::chrono::seconds retry_in)
        : cache::FetchFailure(proto::ErrorCode::registry_failed, message, cached, retry_in) {}
};

// The package for `platform` out of a mirror's VERSION.json answer: {"platform",
// "filename","download_url","hashes"}. Throws proto::Error{not_found} naming
// the platforms the mirror has.
proto::Json mirror_package(const RegistryDocument& document, const std::string& platform,
                           const std::string& what);

using RegistryStats = upstream::UpstreamStats;

// The origin a registry host's stored credentials go to, and no other:
// "https://HOST/" (HOST with its port, if it has one).
std::string registry_origin(const std::string& host);

class RegistryService {
  public:
    using Cache = cache::AnswerCache<RegistryDocument>;

    // `credentials`: bearer tokens; `discovery`: the registries' service URLs.
    // Throws proto::Error for a bad options.mirror_url.
    RegistryService(boost::asio::any_io_executor io, http::HttpClient& http,
                    credentials::TokenLifecycle& credentials,
                    discovery::DiscoveryService& discovery, RegistryOptions options,
                    Cache::Clock clock = std::chrono::steady_clock::now);

    // Each throws RegistryError, DiscoveryError, or proto::Error with
    // not_found (404) or unsupported_service (the host lacks the service).
    boost::asio::awaitable<RegistryAnswer> module_versions(proto::ModuleAddress module,
                                                           bool refresh);
    boost::asio::awaitable<RegistryAnswer> module_download(proto::ModuleAddress module,
                                                           proto::SemVer version, bool refresh);
    // `mirror`: nullopt for the provider's own registry.
    boost::asio::awaitable<RegistryAnswer> provider_versions(proto::ProviderAddress provider,
                                                             std::optional<Mirror> mirror,
                                                             bool refresh);
    // For a mirror, the answer is the whole VERSION.json: pick the platform with mirror_package().
    boost::asio::awaitable<RegistryAnswer> provider_package(proto::ProviderAddress provider,
                                                            proto::SemVer version,
                                                            std::string platform,
                                                            std::optional<Mirror> mirror,
                                                            bool refresh);

    // A file registry `host` publishes beside a package (SHA256SUMS and its
    // signature), byte for byte, cached as the documents are (download_ttl,
    // stale-if-error); fetched with `host`'s token when it is on the host's
    // own origin (registry_origin), never elsewhere. The answer's document
    // body is a JSON binary value.
    boost::asio::awaitable<RegistryAnswer> published_file(std::string url, std::string label,
                                                          std::string host);

    // Downloads a package and checks it against the hashes published for it
    // (see PackageFetcher::fetch).
    boost::asio::awaitable<FetchedPackage> fetch_package(std::string url,
                                                         std::vector<std::string> published,
                                                         std::string what);

    // The mirror configured in config.toml, if any.
    const std::optional<Mirror>& default_mirror() const { return default_mirror_; }

    std::size_t flush();
    // Entries of `host`'s modules and providers, and those fetched with its credentials.
    std::size_t flush(const std::string& host);
    RegistryStats stats() const;
    void stop();

  private:
    enum class Kind { versions, download, module_download, file };
    // One document to fetch: at `url`, or (a registry's) at `path` below the
    // URL discovery gives for `service`.
    struct Job {
        Kind kind = Kind::versions;
        std::string key;  // the cache key: "ADDRESS_HOST TOKEN_HOST ..." (flush(host) reads it)
        std::string url;
        std::string service;
        std::string path;
        std::string address_host;  // the module's or provider's registry host
        std::string token_host;    // whose credentials are sent ...
        std::string token_origin;  // ... to this origin only
        std::string label;         // "versions of module ...", for messages and the log
        std::string not_found;     // the message for a 404
        // The response (200, JSON) and the URL asked (before redirects).
        std::function<RegistryDocument(const http::HttpResponse&, const std::string&)> parse;
    };

    Job registry_job(Kind kind, const std::string& host, const std::string& service,
                     const std::string& path) const;
    Job mirror_job(Kind kind, const Mirror& mirror, const std::string& address_host,
                   const std::string& path) const;
    Job module_versions_job(const proto::ModuleAddress& module) const;
    Job module_download_job(const proto::ModuleAddress& module, const proto::SemVer& version) const;
    Job provider_versions_job(const proto::ProviderAddress& provider,
                              const std::optional<Mirror>& mirror) const;
    Job provider_package_job(const proto::ProviderAddress& provider, const proto::SemVer& version,
                             const std::string& platform,
                             const std::optional<Mirror>& mirror) const;
    Cache::Fetch fetcher(const std::shared_ptr<const Job>& job);
    boost::asio::awaitable<std::string> service_url(std::string host, std::string service);
    boost::asio::awaitable<RegistryAnswer> get(Job job, bool refresh);
    boost::asio::awaitable<Cache::Fetched> fetch(std::shared_ptr<const Job> job);
    // The document at `url`, once known.
    boost::asio::awaitable<Cache::Fetched> fetch_from(std::shared_ptr<const Job> job,
                                                      std::string url);
    upstream::UpstreamRequest request_of(const Job& job, const std::string& url) const;
    Cache::Fetched settle(const Job& job, upstream::Verdict verdict);

    discovery::DiscoveryService& discovery_;
    RegistryOptions options_;
    Cache::Clock clock_;
    std::optional<Mirror> default_mirror_;
    Cache cache_;
    upstream::Upstream upstream_;
    PackageFetcher fetcher_;
};

}  // namespace hostkeeper::daemon::registry
