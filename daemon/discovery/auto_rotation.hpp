#pragma once
// Automatic rotation of the tokens of the hosts configured with
// `rotate = true` ([hosts."NAME"]): a timer in the daemon looks at each
// host's stored "expires_at" and rotates the token (DiscoveryService::
// rotate_token) when it is due: within a tenth of the host's
// rotate_lifetime of its expiry, or 3 days, whichever is less; a token of
// unknown expiry at once. After a failure the host waits an hour. Each
// outcome is logged, never a token.

#include <boost/asio/any_io_executor.hpp>
#include <boost/asio/awaitable.hpp>
#include <chrono>
#include <functional>
#include <map>
#include <optional>
#include <set>
#include <string>

#include "daemon/async/repeating_task.hpp"
#include "daemon/credentials/token_lifecycle.hpp"
#include "daemon/discovery/token_rotation.hpp"

namespace hostkeeper::daemon::discovery {

using WallClock = std::chrono::system_clock;

// How long before its expiry a token of `lifetime` is rotated: a tenth of
// it, at most 3 days.
std::chrono::seconds rotation_margin(std::chrono::seconds lifetime);

// Whether a token expiring at `expires` (nullopt: unknown) is due at `now`.
bool rotation_due(const std::optional<WallClock::time_point>& expires,
                  std::chrono::seconds lifetime, WallClock::time_point now);

class AutoRotation {
  public:
    using Rotate = std::function<boost::asio::awaitable<TokenRotation>(std::string host)>;
    using Lifetime = std::function<std::chrono::seconds(const std::string& host)>;

    AutoRotation(boost::asio::any_io_executor io, credentials::TokenLifecycle& credentials,
                 std::set<std::string> hosts, Lifetime lifetime, Rotate rotate);

    // Starts the timer (nothing when no host is configured).
    void start();
    void stop();

  private:
    boost::asio::awaitable<void> visit_all();
    boost::asio::awaitable<void> visit(std::string host);
    boost::asio::awaitable<bool> due(std::string host);

    async::RepeatingTask task_;
    credentials::TokenLifecycle& credentials_;
    std::set<std::string> hosts_;
    Lifetime lifetime_;
    Rotate rotate_;
    std::chrono::seconds interval_{3600};
    std::map<std::string, std::chrono::steady_clock::time_point> failed_;  // host -> when
};

}  // namespace hostkeeper::daemon::discovery
