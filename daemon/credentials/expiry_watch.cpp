#include "daemon/credentials/expiry_watch.hpp"

#include <spdlog/spdlog.h>

#include <boost/asio/co_spawn.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/redirect_error.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <exception>
#include <string>
#include <utility>
#include <vector>

#include "proto/error.hpp"

namespace hostkeeper::daemon::credentials {
namespace asio = boost::asio;

void ExpiryWatch::start() {
    if (timer_) return;
    timer_ = std::make_shared<asio::steady_timer>(io_);
    asio::co_spawn(io_, run(), [](const std::exception_ptr& failure) {
        if (!failure) return;
        try {
            std::rethrow_exception(failure);
        } catch (const std::exception& e) {
            spdlog::error("the expiry watch stopped: {}", e.what());
        }
    });
}

void ExpiryWatch::stop() {
    *stopped_ = true;
    if (timer_) timer_->cancel();
}

asio::awaitable<void> ExpiryWatch::run() {
    // Held by the loop: stop() may come while a look is under way.
    const std::shared_ptr<bool> stopped = stopped_;
    const std::shared_ptr<asio::steady_timer> timer = timer_;
    bool first = true;
    while (!*stopped) {
        timer->expires_after(first ? times_.first : times_.interval);
        boost::system::error_code ec;
        co_await timer->async_wait(asio::redirect_error(asio::use_awaitable, ec));
        if (*stopped) co_return;
        auto looking = look(!first);  // named first (async/toolchain.hpp)
        co_await std::move(looking);
        first = false;
    }
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
        if (*stopped_) co_return;
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
}

// Hands the host to `learn_`, at most once a day; a failure is logged.
asio::awaitable<void> ExpiryWatch::learn(std::string host) {
    using steady = std::chrono::steady_clock;
    if (!learn_) co_return;
    const auto asked = asked_.find(host);
    if (asked != asked_.end() && steady::now() - asked->second < std::chrono::hours(24)) co_return;
    asked_[host] = steady::now();
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
