#pragma once
// The registry cache's routed hosts and their files, kept in step with the
// registry port and with discovery: which hosts go through the listener
// (RoutedHosts), the tfrc and state files rewritten when that changes, the
// hosts learned from Terraform's `get HOST` (discovered in the background),
// and how the registry port stands (registered, lost, unavailable).

#include <boost/asio/any_io_executor.hpp>
#include <boost/asio/awaitable.hpp>
#include <chrono>
#include <cstdint>
#include <filesystem>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "daemon/discovery/discovery_service.hpp"
#include "daemon/registry_cache/cache_config.hpp"
#include "daemon/registry_cache/routed_hosts.hpp"
#include "proto/json.hpp"
#include "proto/port_link.hpp"

namespace hostkeeper::daemon::registry_cache {

class HostRouting {
  public:
    // `config`: nullopt when the cache is off (nothing is routed, no file written).
    HostRouting(boost::asio::any_io_executor io, const std::optional<CacheConfig>& config,
                std::filesystem::path state_file, discovery::DiscoveryService& discovery);

    // The registry port: registered (the files point at it), lost (the
    // link ended; the blocks stay), unavailable (the blocks go, and why),
    // held by another daemon of this user (the files are that one's).
    void port_registered(std::uint16_t port);
    void port_lost(std::string why);
    void port_unavailable(std::string why);
    void port_held_elsewhere(const proto::PortHolder& holder);
    bool holds_port() const { return held_; }
    // The port the files name, once registered.
    const std::optional<std::uint16_t>& port() const { return port_; }

    // Whether Terraform's requests for `host` (normalized) go through the listener.
    bool routes(const std::string& host) const;
    // Discovers `host` in the background and routes it when it offers a
    // registry (once per host per 10 minutes at most).
    void learn(const std::string& host);
    // A routed host's block follows its discovery document: a new document
    // (refreshed by any request) with other services rewrites the files.
    boost::asio::awaitable<void> follow_discovery(std::string host);
    // Discovers `hosts` (all known when empty), routes or unroutes them;
    // `refresh`: asks each host again rather than taking a cached answer.
    boost::asio::awaitable<void> sync(std::vector<std::string> hosts, bool refresh = true);

    // status's fields of the port (listen, held, held_by, error,
    // blocks_withdrawn, other_daemon), and of the files (files_error, hosts).
    void port_status(proto::Json& out) const;
    void files_status(proto::Json& out) const;

    // status's "hosts": each known host, routed or not.
    proto::Json hosts_status() const { return routed_ ? routed_->status() : proto::Json::array(); }
    // Whether hosts are routed at all: the cache is on, or serves runs.
    bool active() const { return routed_.has_value(); }
    // Routes hosts for runs' own ports even while the cache is off (then
    // with no file: the runs' configurations name the hosts).
    void serve_runs();

    // The hosts known, routed or not (none while the cache is off).
    std::map<std::string, RoutedHost> hosts() const {
        return routed_ ? routed_->hosts() : std::map<std::string, RoutedHost>{};
    }

    // Called whenever a host is routed or unrouted, or a routed host's
    // services change (the runs' host blocks follow).
    void on_routes_changed(std::function<void()> listener) { changed_ = std::move(listener); }

    void stop() { stopped_ = true; }

  private:
    // The files rewritten, the listener told.
    void routes_changed();
    boost::asio::awaitable<void> discover_and_route(std::string host, bool refresh);
    void spawn_discovery(const std::string& host);
    void write_files();

    boost::asio::any_io_executor io_;
    discovery::DiscoveryService& discovery_;
    std::optional<RoutedHosts> routed_;
    std::optional<std::uint16_t> port_;              // the registry port the files name
    bool held_ = false;                              // registered with hostkeeper-portd now
    std::optional<proto::PortHolder> other_daemon_;  // holds the port instead of this one
    bool files_decided_ = false;                     // whether the files may be written yet
    std::string port_error_ = "not registered with hostkeeper-portd yet";
    std::string files_error_;
    std::map<std::string, std::chrono::steady_clock::time_point> learning_;
    std::map<std::string, std::shared_ptr<const discovery::DiscoveryDocument>> seen_;
    std::function<void()> changed_;
    bool stopped_ = false;
};

}  // namespace hostkeeper::daemon::registry_cache
