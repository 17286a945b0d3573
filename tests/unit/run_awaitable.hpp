#pragma once
// Runs one awaitable on an io_context, its result returned or its exception
// rethrown: until the context has nothing left to do (run_until_idle: work
// the awaitable started in the background, such as an archive download,
// included), or until the awaitable itself is done (run_to_completion: a
// timer it leaves armed, such as a cache's purge timer, would keep run()
// going).

#include <boost/asio/co_spawn.hpp>
#include <boost/asio/io_context.hpp>
#include <exception>
#include <optional>
#include <utility>

namespace hostkeeper::test {

template <typename T>
T run_until_idle(boost::asio::io_context& io, boost::asio::awaitable<T> work) {
    std::optional<T> result;
    std::exception_ptr failure;
    boost::asio::co_spawn(io, std::move(work), [&](std::exception_ptr e, T value) {
        failure = std::move(e);
        result = std::move(value);
    });
    io.restart();
    io.run();
    if (failure) std::rethrow_exception(failure);
    return std::move(*result);
}

template <typename T>
T run_to_completion(boost::asio::io_context& io, boost::asio::awaitable<T> work) {
    std::optional<T> result;
    std::exception_ptr failure;
    boost::asio::co_spawn(io, std::move(work), [&](const std::exception_ptr& e, T value) {
        failure = e;
        if (!e) result = std::move(value);
        io.stop();
    });
    io.restart();
    io.run();
    if (failure) std::rethrow_exception(failure);
    return std::move(*result);
}

inline void run_to_completion(boost::asio::io_context& io, boost::asio::awaitable<void> work) {
    std::exception_ptr failure;
    boost::asio::co_spawn(io, std::move(work), [&](const std::exception_ptr& e) {
        failure = e;
        io.stop();
    });
    io.restart();
    io.run();
    if (failure) std::rethrow_exception(failure);
}

}  // namespace hostkeeper::test
