#pragma once
// Runs one awaitable on an io_context until the context has nothing left to
// do (work the awaitable started in the background, such as an archive
// download, included); its result, or its exception rethrown.

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

}  // namespace hostkeeper::test
