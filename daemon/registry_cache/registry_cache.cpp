#include "daemon/registry_cache/registry_cache.hpp"

#include <map>
#include <utility>

namespace hostkeeper::daemon::registry_cache {
namespace asio = boost::asio;
using proto::Json;

RegistryCache::RegistryCache(const asio::any_io_executor& io, std::optional<CacheConfig> config,
                             std::filesystem::path state_file, std::filesystem::path snapshot_dir,
                             credentials::TokenLifecycle& credentials,
                             discovery::DiscoveryService& discovery,
                             registry::RegistryService& registry, archives::ArchiveStore& archives)
    : config_(std::move(config)),
      credentials_(credentials),
      archives_(archives),
      routing_(io, config_, std::move(state_file), discovery),
      answers_(registry, archives, credentials, std::move(snapshot_dir)),
      gate_(routing_, credentials, answers_),
      runs_(io, credentials.run_tokens()) {
    routing_.on_routes_changed([this] { runs_.hosts_changed(); });
}

void RegistryCache::port_registered(std::uint16_t port) {
    routing_.port_registered(port);
}

asio::awaitable<Json> RegistryCache::sync(std::vector<std::string> hosts) {
    auto syncing = routing_.sync(std::move(hosts));  // named first
    co_await std::move(syncing);
    co_return status();
}

asio::awaitable<std::string> RegistryCache::run_tfrc(std::uint16_t port,
                                                     std::vector<std::string> hosts,
                                                     std::set<std::string> kept) {
    routing_.serve_runs();
    if (!hosts.empty()) {
        auto syncing = routing_.sync(std::move(hosts), false);  // named first
        co_await std::move(syncing);
    }
    std::map<std::string, RoutedHost> shown = routing_.hosts();
    std::erase_if(shown, [&kept](const auto& entry) { return kept.count(entry.first) != 0; });
    runs_.told(port);
    co_return render_tfrc(shown, base_url(port));
}

// Where the token for `host`'s upstream requests comes from, first found:
// a run's, the host's token_command, the keyring (when it holds one).
std::string RegistryCache::token_source(const std::string& host) const {
    if (credentials_.run_tokens().holds(host)) return "run";
    if (credentials_.has_token_command(host)) return "token_command";
    return "keyring";
}

Json RegistryCache::hosts_status() const {
    Json hosts = routing_.hosts_status();
    for (Json& host : hosts)
        host["token_source"] = token_source(host.at("host").get<std::string>());
    return hosts;
}

Json RegistryCache::status() const {
    if (!config_) {
        // Off, but serving runs: their hosts.
        Json off = {{"enabled", false}, {"runs", runs_.count()}};
        if (routing_.active()) off["hosts"] = hosts_status();
        off["fleet"] = archives_.tier_status();
        return off;
    }
    Json out = {{"enabled", true}, {"runs", runs_.count()}};
    routing_.port_status(out);
    out["config_file"] = config_->origin.string();
    Json files = Json::array();
    for (const auto& file : config_->tfrc_files) files.push_back(file.string());
    out["tfrc_files"] = std::move(files);
    routing_.files_status(out);
    out["hosts"] = hosts_status();
    out["requests"] = gate_.requests();
    out["refused"] = gate_.refused();
    out["from_disk"] = gate_.from_disk();
    const archives::ArchiveStats a = archives_.stats();
    out["archives"] = {
        {"count", a.count},
        {"bytes", a.bytes},
        {"max_bytes", a.max_bytes},
        {"downloads", a.downloads},
        {"hits", a.hits},
        {"evictions", a.evictions},
        {"failures", a.failures},
        {"passed_through", a.passed_through},
        {"rejected", a.rejected},
        {"store_problem", a.store_problem.empty() ? Json(nullptr) : Json(a.store_problem)}};
    out["fleet"] = archives_.tier_status();
    return out;
}

}  // namespace hostkeeper::daemon::registry_cache
