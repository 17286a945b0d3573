#pragma once
// The answer of a hostkeeperd that cannot run with its configuration but was
// started by socket activation: systemd would only restart it into the same
// error until it gave up, and the client would hear nothing. Instead it
// answers every request with `config_error` and the reason (file, line,
// key), honours `stop`, and exits when idle, so that the fixed file takes
// effect on the next connection.

#include <string>

#include "daemon/server/request_handler.hpp"

namespace hostkeeper::daemon::handlers {

class ConfigErrorHandler final : public server::RequestHandler {
  public:
    // `reason`: the configuration error.
    explicit ConfigErrorHandler(std::string reason);

    boost::asio::awaitable<server::Reply> handle(std::string_view payload,
                                                 server::ServerState server) override;

  private:
    std::string message_;
};

}  // namespace hostkeeper::daemon::handlers
