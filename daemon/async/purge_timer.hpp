#pragma once
// The event loop's side of a TTL cache: the cache says when its next entry
// expires, this waits and then calls `purge` (which returns the next expiry,
// if any). Purges are coalesced to at most one a second.

#include <boost/asio/any_io_executor.hpp>
#include <boost/asio/steady_timer.hpp>
#include <chrono>
#include <functional>
#include <optional>

namespace hostkeeper::daemon::async {

class PurgeTimer {
  public:
    using time_point = std::chrono::steady_clock::time_point;
    using Clock = std::function<time_point()>;
    using Purge = std::function<std::optional<time_point>()>;

    PurgeTimer(const boost::asio::any_io_executor& io, Clock clock, Purge purge)
        : timer_(io), clock_(std::move(clock)), purge_(std::move(purge)) {}

    // Make sure a purge runs by `expiry` (or a second from now, if later).
    void schedule(time_point expiry) {
        if (at_ && *at_ <= expiry) return;
        const time_point now = clock_();
        const auto delay =
            std::max<std::chrono::steady_clock::duration>(expiry - now, std::chrono::seconds(1));
        at_ = now + delay;
        timer_.expires_after(delay);
        timer_.async_wait([this](const boost::system::error_code& ec) {
            if (ec) return;
            at_.reset();
            if (const auto next = purge_()) schedule(*next);
        });
    }

    void stop() {
        timer_.cancel();
        at_.reset();
    }

  private:
    boost::asio::steady_timer timer_;
    Clock clock_;
    Purge purge_;
    std::optional<time_point> at_;
};

}  // namespace hostkeeper::daemon::async
