#pragma once
// The registry port's answer while hostkeeperd cannot run with its
// configuration: every request hostkeeper-portd hands over is answered at
// once with 503 and the configuration error (file, line, key) as its reason
// phrase, which Terraform prints ("503 hostkeeperd cannot run with its
// configuration: ..."). Without it Terraform would wait for a daemon that
// never registers, and then hear only that none is running.

#include <boost/asio/awaitable.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <chrono>
#include <cstddef>
#include <functional>
#include <memory>
#include <string>

namespace hostkeeper::daemon::registry_cache {

class ConfigErrorListener {
  public:
    // `reason`: the configuration error. `activity` runs for each request
    // answered (the daemon's idle timer counts it as a client).
    ConfigErrorListener(boost::asio::io_context& io, std::string reason,
                        std::function<void()> activity);
    // Answers the connection's first request and closes it; over the cap it is reset.
    void adopt(boost::asio::ip::tcp::socket socket);

    static constexpr std::size_t kMaxConnections = 64;
    static constexpr std::chrono::seconds kReadTimeout{10};

  private:
    boost::asio::awaitable<void> answer(boost::asio::ip::tcp::socket socket);

    boost::asio::io_context& io_;
    std::string reason_;
    std::function<void()> activity_;
    std::shared_ptr<std::size_t> open_ = std::make_shared<std::size_t>(0);
};

}  // namespace hostkeeper::daemon::registry_cache
