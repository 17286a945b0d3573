#pragma once
// The registry port's HTTP requests, handed from the HTTP listener
// (server/http_listener) to the registry cache's gate, which answers them.

#include <boost/asio/awaitable.hpp>

#include "daemon/registry_cache/listener_messages.hpp"
#include "daemon/server/http_handler.hpp"

// Held by reference: declared, not included.
namespace hostkeeper::daemon::registry_cache {
class Gate;
}

namespace hostkeeper::daemon::handlers {

class RegistryPortRequests : public server::HttpHandler {
  public:
    explicit RegistryPortRequests(registry_cache::Gate& gate) : gate_(gate) {}
    boost::asio::awaitable<server::HttpAnswer> answer(server::HttpRequest request) override;

  private:
    registry_cache::Gate& gate_;
};

}  // namespace hostkeeper::daemon::handlers
