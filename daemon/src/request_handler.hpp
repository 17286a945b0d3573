#pragma once
// What the server asks of whatever answers requests: one payload in, one
// payload out. The dispatcher is the daemon's; a daemon that cannot run
// with its configuration answers with the reason instead.

// clang-format off
#include <utility>  // before Asio: boost 1.74 awaitable.hpp uses std::exchange unincluded
// clang-format on
#include <boost/asio/awaitable.hpp>
#include <string>
#include <string_view>

namespace hostkeeper::daemon {

class RequestHandler {
  public:
    RequestHandler() = default;
    RequestHandler(const RequestHandler&) = delete;
    RequestHandler& operator=(const RequestHandler&) = delete;
    virtual ~RequestHandler() = default;

    // The response payload (JSON text); never throws for bad input. It may
    // hold a token: the caller scrubs it once written.
    virtual boost::asio::awaitable<std::string> handle(std::string_view payload) = 0;
};

}  // namespace hostkeeper::daemon
