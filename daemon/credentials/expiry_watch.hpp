#pragma once
// The daemon's look at every stored host's expiry, on a timer: soon after
// start and then every hour, it lists the keyring's Terraform items (as
// `list` does) and reads each host's credentials through the credential
// service, so that a token's expiry is warned of (TokenStanding: the log
// line and the alert, once per host and stage) even when no client asks
// for the host. Never prompts: a locked keyring ends the look quietly, and
// the next one tries again. Hosts with a token_command are left out (their
// tokens come from the command, not the keyring). On the hourly looks (not
// the first, so that a daemon started on demand sends nothing at start), a
// host whose token's expiry is unknown, and which is not withheld (refused),
// is handed to `learn` (the host's token list,
// discovery::DiscoveryService::learn_expiry) at most once a day.

#include <boost/asio/any_io_executor.hpp>
#include <boost/asio/awaitable.hpp>
#include <chrono>
#include <functional>
#include <map>
#include <string>

#include "daemon/async/repeating_task.hpp"
#include "daemon/credentials/keyring_items.hpp"
#include "daemon/credentials/token_lifecycle.hpp"

namespace hostkeeper::daemon::credentials {

struct ExpiryWatchTimes {
    std::chrono::seconds first{2};        // after start
    std::chrono::seconds interval{3600};  // then
};

class ExpiryWatch {
  public:
    using Learn = std::function<boost::asio::awaitable<void>(std::string host)>;

    ExpiryWatch(boost::asio::any_io_executor io, KeyringItems& items, TokenLifecycle& credentials,
                ExpiryWatchTimes times = {})
        : task_(std::move(io)), items_(items), credentials_(credentials), times_(times) {}

    // Before start(): how a host's unknown expiry is learned (none: never).
    void learn_with(Learn learn) { learn_ = std::move(learn); }
    void start();
    void stop();

    // One look at every stored host (what each tick does); `learning`: hand
    // the hosts of unknown expiry to `learn` (once a day each).
    boost::asio::awaitable<void> look(bool learning = false);

  private:
    boost::asio::awaitable<void> learn(std::string host);

    async::RepeatingTask task_;
    KeyringItems& items_;
    TokenLifecycle& credentials_;
    ExpiryWatchTimes times_;
    Learn learn_;
    std::map<std::string, std::chrono::steady_clock::time_point> asked_;  // host -> last learn
};

}  // namespace hostkeeper::daemon::credentials
