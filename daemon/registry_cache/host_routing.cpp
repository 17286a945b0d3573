#include "daemon/registry_cache/host_routing.hpp"

#include <spdlog/spdlog.h>

#include <boost/asio/co_spawn.hpp>
#include <exception>
#include <string_view>

#include "proto/error.hpp"

namespace hostkeeper::daemon::registry_cache {
namespace asio = boost::asio;
using proto::Json;

namespace {

constexpr std::chrono::minutes kLearnAgain{10};
constexpr std::size_t kMaxLearning = 4096;

// A name under .invalid (RFC 6761), such as the probe item of `hostkeeper
// doctor`, resolves nowhere: there is nothing to discover or route.
bool never_a_registry(const std::string& host) {
    const std::string_view name = std::string_view(host).substr(0, host.rfind(':'));
    constexpr std::string_view kInvalid = ".invalid";
    return name == kInvalid.substr(1) || (name.size() > kInvalid.size() &&
                                          name.substr(name.size() - kInvalid.size()) == kInvalid);
}

}  // namespace

HostRouting::HostRouting(asio::any_io_executor io, const std::optional<CacheConfig>& config,
                         std::filesystem::path state_file, discovery::DiscoveryService& discovery)
    : io_(std::move(io)), discovery_(discovery) {
    if (!config) return;
    routed_.emplace(config->hosts, std::move(state_file), config->tfrc_files, std::string());
    if (std::string problem = routed_->load(); !problem.empty())
        spdlog::warn("registry cache: {}; starting with the named hosts only", problem);
    // The files are written once the registry port's state is known.
    // The named hosts are discovered at start; the learned ones when used.
    for (const std::string& host : config->hosts) spawn_discovery(host);
}

void HostRouting::serve_runs() {
    if (!routed_)
        routed_.emplace(std::vector<std::string>{}, std::filesystem::path(),
                        std::vector<std::filesystem::path>{}, std::string());
}

void HostRouting::spawn_discovery(const std::string& host) {
    asio::co_spawn(io_, discover_and_route(host, false), [host](const std::exception_ptr& failure) {
        if (!failure) return;
        try {
            std::rethrow_exception(failure);
        } catch (const std::exception& e) {
            spdlog::error("registry cache: discovering {} failed: {}", host, e.what());
        }
    });
}

void HostRouting::port_registered(std::uint16_t port) {
    held_ = true;
    other_daemon_.reset();
    port_error_.clear();
    if (!routed_) return;
    port_ = port;
    routed_->base_url(base_url(port));
    routed_->suspend(false);
    files_decided_ = true;
    write_files();
}

void HostRouting::port_lost(std::string why) {
    held_ = false;
    other_daemon_.reset();
    port_error_ = std::move(why);
}

void HostRouting::port_unavailable(std::string why) {
    held_ = false;
    other_daemon_.reset();
    port_error_ = std::move(why);
    if (!routed_) return;
    const bool was_suspended = files_decided_ && routed_->suspended();
    routed_->suspend(true);
    files_decided_ = true;
    if (!was_suspended) write_files();
}

void HostRouting::port_held_elsewhere(const proto::PortHolder& holder) {
    held_ = false;
    other_daemon_ = holder;
    port_error_ = "another hostkeeperd of this user holds the registry port (pid " +
                  std::to_string(holder.pid) +
                  (holder.socket.empty() ? std::string() : ", socket " + holder.socket) + ")";
}

bool HostRouting::routes(const std::string& host) const {
    return routed_ && routed_->routed(host);
}

void HostRouting::write_files() {
    if (!files_decided_) return;
    try {
        routed_->write();
        files_error_.clear();
    } catch (const std::exception& e) {
        files_error_ = e.what();
        spdlog::error("registry cache: cannot write its files: {}", e.what());
    }
}

void HostRouting::routes_changed() {
    write_files();
    if (changed_) changed_();
}

void HostRouting::learn(const std::string& host) {
    if (!routed_ || stopped_ || routed_->routed(host) || never_a_registry(host)) return;
    const auto now = std::chrono::steady_clock::now();
    const auto it = learning_.find(host);
    if (it != learning_.end() && now - it->second < kLearnAgain) return;
    if (learning_.size() >= kMaxLearning) learning_.clear();
    learning_[host] = now;
    spawn_discovery(host);
}

asio::awaitable<void> HostRouting::discover_and_route(std::string host, bool refresh) {
    std::string failure;
    try {
        auto discovering = discovery_.discover(host, refresh);  // named first
        const discovery::DiscoveryAnswer answer = co_await std::move(discovering);
        seen_[host] = answer.document;
        if (routed_->discovered(host, answer.services().services)) {
            spdlog::info("registry cache: {} {}", host,
                         routed_->routed(host) ? "routed through the listener"
                                               : "no longer routed (it offers no registry)");
            routes_changed();
        }
    } catch (const std::exception& e) {
        failure = e.what();
    }
    if (!failure.empty()) {
        spdlog::info("registry cache: {} not routed: {}", host, failure);
        routed_->failed(host, failure);
    }
}

asio::awaitable<void> HostRouting::follow_discovery(std::string host) {
    std::shared_ptr<const discovery::DiscoveryDocument> document;
    try {
        auto discovering = discovery_.discover(host, false);  // named first
        const discovery::DiscoveryAnswer answer = co_await std::move(discovering);
        document = answer.document;
    } catch (const std::exception&) {
        co_return;  // an outage changes no block; the request says what failed
    }
    std::shared_ptr<const discovery::DiscoveryDocument>& seen = seen_[host];
    if (seen == document) co_return;
    seen = document;
    if (routed_->discovered(host, document->services.services)) routes_changed();
}

asio::awaitable<void> HostRouting::sync(std::vector<std::string> hosts, bool refresh) {
    if (!routed_)
        throw proto::Error(proto::ErrorCode::unsupported_service,
                           "the registry cache is off: run hostkeeper setup --registry-cache");
    if (hosts.empty()) {
        for (const auto& [host, entry] : routed_->hosts()) hosts.push_back(host);
    }
    for (const std::string& host : hosts) {
        auto routing = discover_and_route(host, refresh);  // named first
        co_await std::move(routing);
    }
}

void HostRouting::port_status(Json& out) const {
    out["listen"] = port_ ? Json(listen_address(*port_)) : Json(nullptr);
    out["held"] = held_;
    out["held_by"] = held_ ? Json("hostkeeper-portd") : Json(nullptr);
    out["error"] = held_ ? Json(nullptr) : Json(port_error_);
    out["blocks_withdrawn"] = files_decided_ && routed_ && routed_->suspended();
    if (other_daemon_) {
        out["other_daemon"] =
            Json{{"pid", other_daemon_->pid},
                 {"socket",
                  other_daemon_->socket.empty() ? Json(nullptr) : Json(other_daemon_->socket)}};
    } else {
        out["other_daemon"] = nullptr;
    }
}

void HostRouting::files_status(Json& out) const {
    out["files_error"] = files_error_.empty() ? Json(nullptr) : Json(files_error_);
    out["hosts"] = hosts_status();
}

}  // namespace hostkeeper::daemon::registry_cache
