#include "daemon/discovery/auto_rotation.hpp"

#include <spdlog/spdlog.h>

#include <algorithm>
#include <exception>
#include <utility>

#include "daemon/discovery/authentication_tokens.hpp"

namespace hostkeeper::daemon::discovery {
namespace asio = boost::asio;
using std::chrono::seconds;

namespace {

constexpr seconds kRetryAfterFailure{3600};
constexpr seconds kLongestWait{3600};

}  // namespace

seconds rotation_margin(seconds lifetime) {
    return std::min<seconds>(lifetime / 10, std::chrono::hours(72));
}

bool rotation_due(const std::optional<WallClock::time_point>& expires, seconds lifetime,
                  WallClock::time_point now) {
    if (!expires) return true;
    return *expires - rotation_margin(lifetime) <= now;
}

AutoRotation::AutoRotation(asio::any_io_executor io, credentials::TokenLifecycle& credentials,
                           std::set<std::string> hosts, Lifetime lifetime, Rotate rotate)
    : task_(std::move(io)),
      credentials_(credentials),
      hosts_(std::move(hosts)),
      lifetime_(std::move(lifetime)),
      rotate_(std::move(rotate)) {
    // Looked at twice within the shortest margin, at least every hour.
    for (const std::string& host : hosts_) {
        interval_ = std::clamp<seconds>(rotation_margin(lifetime_(host)) / 2, seconds(1),
                                        std::min(interval_, kLongestWait));
    }
}

void AutoRotation::start() {
    if (hosts_.empty()) return;
    task_.start(
        interval_, interval_, [this](bool) { return visit_all(); }, "automatic rotation");
}

void AutoRotation::stop() {
    task_.stop();
}

asio::awaitable<void> AutoRotation::visit_all() {
    for (const std::string& host : hosts_) {
        auto visiting = visit(host);  // named first
        co_await std::move(visiting);
        if (task_.stopped()) co_return;
    }
}

asio::awaitable<void> AutoRotation::visit(std::string host) {
    const auto failed = failed_.find(host);
    if (failed != failed_.end() &&
        std::chrono::steady_clock::now() - failed->second < kRetryAfterFailure)
        co_return;
    auto asking = due(host);  // named first
    const bool rotate = co_await std::move(asking);
    if (!rotate) co_return;
    auto rotating = rotate_(host);  // named first
    const TokenRotation result = co_await std::move(rotating);
    if (result.rotated()) {
        failed_.erase(host);
        spdlog::info("automatic rotation of {}: new token {} until {}{}", host, result.token_id,
                     result.expires_at,
                     result.revoked.empty() ? "" : ", revoked " + result.revoked);
        if (!result.warning.empty())
            spdlog::warn("automatic rotation of {}: {}", host, result.warning);
        co_return;
    }
    failed_[host] = std::chrono::steady_clock::now();
    spdlog::warn("automatic rotation of {} failed ({}): {}; trying again in an hour", host,
                 to_string(result.failed), result.message);
}

// Whether the host's stored token is due; false when the keyring cannot say
// or nothing is stored (the daemon's other requests report those).
asio::awaitable<bool> AutoRotation::due(std::string host) {
    bool out = false;
    try {
        auto reading = credentials_.get(host);  // named first
        const std::optional<proto::Secret> stored = co_await std::move(reading);
        out = stored && rotation_due(stored_expiry(*stored), lifetime_(host), WallClock::now());
    } catch (const std::exception& e) {
        spdlog::debug("automatic rotation of {}: the credentials cannot be read: {}", host,
                      e.what());
    }
    co_return out;
}

}  // namespace hostkeeper::daemon::discovery
