#pragma once
// Running blocking work (keyring calls, hashing a package) off the event
// loop: on a worker executor, resuming the awaiting coroutine on its own.

#include <boost/asio/any_io_executor.hpp>
#include <boost/asio/associated_executor.hpp>
#include <boost/asio/async_result.hpp>
#include <boost/asio/execution/outstanding_work.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/prefer.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <exception>
#include <type_traits>
#include <utility>
#include <variant>

namespace hostkeeper::daemon::async {

// Runs `f` on `worker` and resumes the awaiting coroutine on its own
// executor with f's result or exception (plain handlers, not a lambda
// coroutine: see "Named first" in docs/DEVELOPMENT.md). A void `f` yields
// std::monostate.
template <typename F>
auto on_worker(const boost::asio::any_io_executor& worker, F f) {
    using Raw = std::invoke_result_t<F>;
    using R = std::conditional_t<std::is_void_v<Raw>, std::monostate, Raw>;
    return boost::asio::async_initiate<decltype(boost::asio::use_awaitable),
                                       void(std::exception_ptr, R)>(
        [worker](auto handler, F fn) {
            // Tracked: the event loop keeps running while the worker works.
            auto home = boost::asio::prefer(boost::asio::get_associated_executor(handler),
                                            boost::asio::execution::outstanding_work.tracked);
            boost::asio::post(worker,
                              [handler = std::move(handler), fn = std::move(fn), home]() mutable {
                                  std::exception_ptr failure;
                                  R result{};
                                  try {
                                      if constexpr (std::is_void_v<Raw>) {
                                          fn();
                                      } else {
                                          result = fn();
                                      }
                                  } catch (...) {
                                      failure = std::current_exception();
                                  }
                                  boost::asio::post(home, [handler = std::move(handler), failure,
                                                           result = std::move(result)]() mutable {
                                      std::move(handler)(failure, std::move(result));
                                  });
                              });
        },
        boost::asio::use_awaitable, std::move(f));
}

}  // namespace hostkeeper::daemon::async
