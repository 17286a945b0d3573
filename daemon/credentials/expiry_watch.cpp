#include "daemon/credentials/expiry_watch.hpp"

#include <spdlog/spdlog.h>

#include <exception>
#include <string>
#include <utility>
#include <vector>

#include "proto/error.hpp"

namespace hostkeeper::daemon::credentials {
namespace asio = boost::asio;

void ExpiryWatch::start() {
    // The first look learns nothing: a daemon started on demand sends no
    // request to any host at start.
    task_.start(
        times_.first, times_.interval, [this](bool first) { return look(!first); },
        "the expiry watch");
}

void ExpiryWatch::stop() {
    task_.stop();
}

asio::awaitable<void> ExpiryWatch::look(bool learning) {
    std::vector<ItemInfo> items;
    try {
        auto listing = items_.items();  // named first
        items = co_await std::move(listing);
    } catch (const std::exception& e) {
        spdlog::debug("expiry watch: the keyring's items cannot be listed: {}", e.what());
        co_return;
    }
    for (const ItemInfo& item : items) {
        if (task_.stopped()) co_return;
        if (credentials_.has_token_command(item.host)) continue;
        bool locked = false;
        try {
            auto reading = credentials_.get(item.host);  // named first
            const std::optional<proto::Secret> stored = co_await std::move(reading);
            // Logs and alerts the stage the host's expiry is in, if it is new;
            // a refused token is not sent to learn anything.
            const bool withheld = stored && credentials_.withheld(item.host).has_value();
            if (stored && !withheld && learning && !credentials_.expiry(item.host)) {
                auto asking = learn(item.host);  // named first
                co_await std::move(asking);
            }
        } catch (const proto::Error& e) {
            locked = e.code() == proto::ErrorCode::keyring_locked;
            if (!locked) spdlog::debug("expiry watch: {} cannot be read: {}", item.host, e.what());
        }
        if (locked) co_return;  // quietly: the next look tries again
    }
    spdlog::debug("expiry watch: looked at {} stored hosts", items.size());
}

// Hands the host to `learn_`, at most once a day; a failure is logged.
asio::awaitable<void> ExpiryWatch::learn(std::string host) {
    using std::chrono::steady_clock;
    if (!learn_) co_return;
    const auto asked = asked_.find(host);
    if (asked != asked_.end() && steady_clock::now() - asked->second < std::chrono::hours(24))
        co_return;
    asked_[host] = steady_clock::now();
    std::string failure;
    try {
        auto learning = learn_(host);  // named first
        co_await std::move(learning);
    } catch (const std::exception& e) {
        failure = e.what();
    }
    if (!failure.empty())
        spdlog::debug("expiry watch: the expiry of {}'s token not learned: {}", host, failure);
}

}  // namespace hostkeeper::daemon::credentials
