#pragma once
// One piece of work per key at a time: the first caller for a key runs it,
// callers arriving meanwhile wait and get (a copy of) the same result or
// exception. Event-loop only (no locking): all callers run on one executor.

#include <boost/asio/any_io_executor.hpp>
#include <boost/asio/awaitable.hpp>
#include <boost/asio/redirect_error.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <exception>
#include <memory>
#include <optional>
#include <string>
#include <unordered_map>
#include <utility>

namespace hostkeeper::daemon::async {

template <typename T>
class SingleFlight {
  public:
    explicit SingleFlight(boost::asio::any_io_executor io) : io_(std::move(io)) {}

    // `work()` returns awaitable<T>; `copy(const T&)` makes each waiter's T.
    template <typename Work, typename Copy>
    boost::asio::awaitable<T> run(const std::string& key, Work work, Copy copy) {
        if (const auto it = flights_.find(key); it != flights_.end()) {
            const std::shared_ptr<Flight> flight = it->second;
            while (!flight->finished) {
                boost::system::error_code ec;
                co_await flight->done.async_wait(
                    boost::asio::redirect_error(boost::asio::use_awaitable, ec));
            }
            if (flight->error) std::rethrow_exception(flight->error);
            co_return copy(*flight->result);
        }
        auto flight = std::make_shared<Flight>(io_);
        flights_.emplace(key, flight);
        try {
            // Named first.
            auto operation = work();
            flight->result.emplace(co_await std::move(operation));
        } catch (...) {
            flight->error = std::current_exception();
        }
        flights_.erase(key);
        flight->finished = true;
        flight->done.cancel();
        if (flight->error) std::rethrow_exception(flight->error);
        co_return copy(*flight->result);
    }

    std::size_t size() const { return flights_.size(); }

  private:
    struct Flight {
        explicit Flight(const boost::asio::any_io_executor& io)
            : done(io, std::chrono::steady_clock::time_point::max()) {}
        boost::asio::steady_timer done;  // waiters park on it; cancelled when the work ends
        bool finished = false;
        std::optional<T> result;
        std::exception_ptr error;
    };

    boost::asio::any_io_executor io_;
    std::unordered_map<std::string, std::shared_ptr<Flight>> flights_;
};

}  // namespace hostkeeper::daemon::async
