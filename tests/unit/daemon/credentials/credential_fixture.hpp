#pragma once
// What the credential tests share: an event loop, a worker for keyring
// calls, an in-memory keyring, clocks the test moves, and running one
// awaitable to completion (run_awaitable.hpp).

#include <boost/asio/co_spawn.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/thread_pool.hpp>
#include <chrono>
#include <exception>
#include <functional>
#include <optional>
#include <string>
#include <utility>

#include "daemon/credentials/keyring.hpp"
#include "memory_keyring.hpp"
#include "proto/secret.hpp"
#include "run_awaitable.hpp"

namespace hostkeeper::test {

struct CredentialFixture {
    template <typename T>
    T run(boost::asio::awaitable<T> task) {
        return run_to_completion(io, std::move(task));
    }
    static std::optional<std::string> text(const std::optional<proto::Secret>& secret) {
        if (!secret) return std::nullopt;
        return std::string(secret->view());
    }
    std::function<std::chrono::steady_clock::time_point()> clock() {
        return [this] { return now; };
    }
    std::function<daemon::credentials::WallTime()> wall_clock() {
        return [this] { return wall; };
    }

    std::chrono::steady_clock::time_point now =
        std::chrono::steady_clock::time_point{} + std::chrono::hours(1000);
    daemon::credentials::WallTime wall{std::chrono::sys_days{std::chrono::year{2026} / 11 / 1}};
    boost::asio::io_context io;
    boost::asio::thread_pool pool{1};
    MemoryKeyring keyring;
};

}  // namespace hostkeeper::test
