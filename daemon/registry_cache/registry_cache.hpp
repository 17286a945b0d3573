#pragma once
// The registry cache: Terraform's and OpenTofu's module and provider registry
// requests (and a configured network mirror's) answered from the daemon's own
// answer cache and archive store, on a loopback listener whose URLs the
// hosts' `host` blocks point at. One cache and one set of counters with the
// socket's registry operations: what `hostkeeper module versions` says is
// what Terraform installs.
//
// The URLs hold no secret. Only this user's connections reach the listener
// (hostkeeper-portd hands each one over by the kernel's word); the gate
// (gate.hpp) says which requests are answered, the answers
// (registry_answers.hpp) come from RegistryService and ArchiveStore, and the
// routed hosts and their files (host_routing.hpp) follow discovery and the
// registry port. RegistryCache puts the three together.

#include <boost/asio/any_io_executor.hpp>
#include <boost/asio/awaitable.hpp>
#include <cstdint>
#include <filesystem>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "daemon/archives/archive_store.hpp"
#include "daemon/credentials/token_lifecycle.hpp"
#include "daemon/discovery/discovery_service.hpp"
#include "daemon/registry/registry_service.hpp"
#include "daemon/registry_cache/cache_config.hpp"
#include "daemon/registry_cache/gate.hpp"
#include "daemon/registry_cache/host_routing.hpp"
#include "daemon/registry_cache/listener_messages.hpp"
#include "daemon/registry_cache/registry_answers.hpp"
#include "daemon/registry_cache/run_ports.hpp"
#include "proto/json.hpp"

namespace hostkeeper::daemon::registry_cache {

class RegistryCache {
  public:
    // `config`: nullopt when the cache is off (every listener request is
    // refused, no host is routed).
    RegistryCache(const boost::asio::any_io_executor& io, std::optional<CacheConfig> config,
                  std::filesystem::path state_file, std::filesystem::path snapshot_dir,
                  credentials::TokenLifecycle& credentials, discovery::DiscoveryService& discovery,
                  registry::RegistryService& registry, archives::ArchiveStore& archives);

    bool enabled() const { return config_.has_value(); }
    const std::optional<CacheConfig>& config() const { return config_; }

    // The link to hostkeeper-portd (PortLink) says how the registry port
    // stands. Registered: connections on `port` reach this daemon, and the
    // tfrc files point at it. Lost: the link ended (the service restarts);
    // the blocks stay, since no other user can hold the port meanwhile.
    // Unavailable: there is no trustworthy registry port here (`why`): the
    // tfrc files lose their blocks and Terraform goes to the registries.
    void port_registered(std::uint16_t port);
    void port_lost(std::string why) { routing_.port_lost(std::move(why)); }
    void port_unavailable(std::string why) { routing_.port_unavailable(std::move(why)); }
    void port_held_elsewhere(const proto::PortHolder& holder) {
        routing_.port_held_elsewhere(holder);
    }
    bool holds_port() const { return routing_.holds_port(); }

    // What answers the listener's requests.
    Gate& gate() { return gate_; }

    // Terraform asked the helper for `host`'s credentials: discover it in the
    // background and route it when it offers a registry (once per host per
    // 10 minutes at most).
    void learn(const std::string& host) { routing_.learn(host); }

    // Discovers `hosts` (all known when empty) again, routes or unroutes
    // them, rewrites the files; the status object.
    boost::asio::awaitable<proto::Json> sync(std::vector<std::string> hosts);

    // status's "registry_cache" object.
    proto::Json status() const;

    // The runs' own ports (hostkeeper exec --registry-cache).
    RunPorts& runs() { return runs_; }

    // A run on `port`: discovers `hosts` (routing those that offer a
    // registry) and returns the tfrc text of host blocks for every routed
    // host but those in `kept` (the user's own blocks win), pointed at `port`.
    boost::asio::awaitable<std::string> run_tfrc(std::uint16_t port, std::vector<std::string> hosts,
                                                 std::set<std::string> kept);

    void stop() {
        runs_.stop();
        routing_.stop();
    }

  private:
    std::string token_source(const std::string& host) const;
    // status's "hosts": each known host, routed or not, and its token's source.
    proto::Json hosts_status() const;

    std::optional<CacheConfig> config_;
    credentials::TokenLifecycle& credentials_;
    archives::ArchiveStore& archives_;
    HostRouting routing_;
    RegistryAnswers answers_;
    Gate gate_;
    RunPorts runs_;
};

}  // namespace hostkeeper::daemon::registry_cache
