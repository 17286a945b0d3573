#pragma once
// Work the daemon does on a timer: `tick` runs on the event loop after
// `first`, then every `interval` after the previous tick ended, until
// stop(). A stop() during a tick cancels the next wait; a tick that loops
// over many things looks at stopped() between them. A tick that throws
// ends the loop, logged with `what`.

#include <spdlog/spdlog.h>

#include <boost/asio/any_io_executor.hpp>
#include <boost/asio/awaitable.hpp>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/redirect_error.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <chrono>
#include <exception>
#include <functional>
#include <memory>
#include <string>
#include <utility>

namespace hostkeeper::daemon::async {

class RepeatingTask {
  public:
    using Duration = std::chrono::steady_clock::duration;
    // `first`: whether this is the tick after the first wait.
    using Tick = std::function<boost::asio::awaitable<void>(bool first)>;

    explicit RepeatingTask(boost::asio::any_io_executor io) : io_(std::move(io)) {}

    // Starts the loop; nothing when it was started before.
    void start(Duration first, Duration interval, Tick tick, std::string what) {
        if (timer_) return;
        timer_ = std::make_shared<boost::asio::steady_timer>(io_);
        boost::asio::co_spawn(io_, run(stopped_, timer_, first, interval, std::move(tick)),
                              [what = std::move(what)](const std::exception_ptr& failure) {
                                  if (!failure) return;
                                  try {
                                      std::rethrow_exception(failure);
                                  } catch (const std::exception& e) {
                                      spdlog::error("{} stopped: {}", what, e.what());
                                  }
                              });
    }
    void stop() {
        *stopped_ = true;
        if (timer_) timer_->cancel();
    }
    bool stopped() const { return *stopped_; }

  private:
    // The loop holds the flag and the timer: stop() may come during a tick.
    static boost::asio::awaitable<void> run(std::shared_ptr<bool> stopped,
                                            std::shared_ptr<boost::asio::steady_timer> timer,
                                            Duration first, Duration interval, Tick tick) {
        for (bool is_first = true; !*stopped; is_first = false) {
            timer->expires_after(is_first ? first : interval);
            boost::system::error_code ec;
            co_await timer->async_wait(boost::asio::redirect_error(boost::asio::use_awaitable, ec));
            if (*stopped) co_return;
            auto ticking = tick(is_first);  // named first
            co_await std::move(ticking);
        }
    }

    boost::asio::any_io_executor io_;
    std::shared_ptr<boost::asio::steady_timer> timer_;
    std::shared_ptr<bool> stopped_ = std::make_shared<bool>(false);
};

}  // namespace hostkeeper::daemon::async
