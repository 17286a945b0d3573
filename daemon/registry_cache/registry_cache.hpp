#pragma once
// The registry cache: Terraform's and OpenTofu's module and provider registry
// requests (and a configured network mirror's) answered from the daemon's own
// answer cache and archive store, on a loopback listener whose URLs the
// hosts' `host` blocks point at. One cache and one set of counters with the
// socket's registry operations: what `hostkeeper module versions` says is
// what Terraform installs.
//
// The URLs hold no secret. Only this user's connections reach the listener
// (hostkeeper-portd hands each one over by the kernel's word on its owner);
// every request must name the listener in its Host header (no DNS
// rebinding), carry none of the headers only web browsers send (Origin,
// Sec-Fetch-*), and, for a host with stored credentials, carry that host's
// token (compared in constant time), which the daemon then sends upstream to
// that host's own origin only. Archives are served only when an answer of
// this daemon named them.

#include <boost/asio/any_io_executor.hpp>
#include <boost/asio/awaitable.hpp>
#include <cstdint>
#include <deque>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "daemon/archives/archive_store.hpp"
#include "daemon/credentials/credential_service.hpp"
#include "daemon/discovery/discovery_service.hpp"
#include "daemon/registry/registry_service.hpp"
#include "daemon/registry_cache/cache_config.hpp"
#include "daemon/registry_cache/document_snapshots.hpp"
#include "daemon/registry_cache/listener_messages.hpp"
#include "daemon/registry_cache/listener_routes.hpp"
#include "daemon/registry_cache/routed_hosts.hpp"
#include "proto/json.hpp"
#include "proto/secret.hpp"

namespace hostkeeper::daemon::registry_cache {

class RegistryCache {
  public:
    // `config`: nullopt when the cache is off (every listener request is
    // refused, `routes` is false for every host).
    RegistryCache(boost::asio::any_io_executor io, std::optional<CacheConfig> config,
                  std::filesystem::path state_file, std::filesystem::path snapshot_dir,
                  credentials::CredentialService& credentials,
                  discovery::DiscoveryService& discovery, registry::RegistryService& registry,
                  archives::ArchiveStore& archives);

    bool enabled() const { return config_.has_value(); }
    const std::optional<CacheConfig>& config() const { return config_; }

    // The link to hostkeeper-portd (PortLink) says how the registry port
    // stands. Registered: connections on `port` reach this daemon, and the
    // tfrc files point at it. Lost: the link ended (the service restarts);
    // the blocks stay, since no other user can hold the port meanwhile.
    // Unavailable: there is no trustworthy registry port here (`why`): the
    // tfrc files lose their blocks and Terraform goes to the registries.
    void port_registered(std::uint16_t port);
    void port_lost(std::string why);
    void port_unavailable(std::string why);
    bool holds_port() const { return held_; }

    // Whether Terraform's requests for `host` (normalized) go through the listener.
    bool routes(const std::string& host) const;

    // One HTTP request on the listener.
    boost::asio::awaitable<ListenerResponse> serve(ListenerRequest request);

    // Terraform asked the helper for `host`'s credentials: discover it in the
    // background and route it when it offers a registry (once per host per
    // 10 minutes at most).
    void learn(const std::string& host);

    // Discovers `hosts` (all known when empty) again, routes or unroutes
    // them, rewrites the files; the status object.
    boost::asio::awaitable<proto::Json> sync(std::vector<std::string> hosts);

    // status's "registry_cache" object.
    proto::Json status() const;

    void stop() { stopped_ = true; }

  private:
    // Archives named and packages answered, remembered at most this many.
    static constexpr std::size_t kMaxPending = 4096;

    struct PendingArchive {
        std::string url;
        std::vector<std::string> published;
        bool verify = true;
        std::string what;
    };

    boost::asio::awaitable<ListenerResponse> answer(Route route, std::string authorization);
    boost::asio::awaitable<ListenerResponse> registry_answer(const Route& route);
    boost::asio::awaitable<ListenerResponse> archive_answer(const Route& route);
    boost::asio::awaitable<ListenerResponse> mirror_answer(const Route& route);
    proto::Json mirror_version(const proto::Json& body, const std::string& what);
    boost::asio::awaitable<void> follow_discovery(std::string host);
    boost::asio::awaitable<void> discover_and_route(std::string host, bool refresh);
    void write_files();
    bool worth_keeping(const Route& route, const ListenerResponse& response) const;
    void remember(const std::string& key, PendingArchive pending);

    boost::asio::any_io_executor io_;
    std::optional<CacheConfig> config_;
    credentials::CredentialService& credentials_;
    discovery::DiscoveryService& discovery_;
    registry::RegistryService& registry_;
    archives::ArchiveStore& archives_;
    std::optional<RoutedHosts> routed_;
    DocumentSnapshots snapshots_;
    std::string base_url_;
    std::optional<std::uint16_t> port_;  // the registry port the files name
    bool held_ = false;                  // registered with hostkeeper-portd now
    bool files_decided_ = false;         // whether the files may be written yet
    std::string port_error_ = "not registered with hostkeeper-portd yet";
    std::string files_error_;
    // Archives Terraform was pointed at, by store key: where to fetch them.
    std::map<std::string, PendingArchive> pending_;
    std::deque<std::string> pending_order_;  // its keys, oldest first
    std::map<std::string, std::chrono::steady_clock::time_point> learning_;
    // Provider package documents answered with the host's token (route paths).
    std::set<std::string> answered_packages_;
    std::map<std::string, std::shared_ptr<const discovery::DiscoveryDocument>> seen_;
    std::uint64_t requests_ = 0;
    std::uint64_t refused_ = 0;
    bool stopped_ = false;
};

}  // namespace hostkeeper::daemon::registry_cache
