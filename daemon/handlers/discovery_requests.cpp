#include "daemon/handlers/discovery_requests.hpp"

#include "daemon/handlers/replies.hpp"

namespace hostkeeper::daemon::handlers {

boost::asio::awaitable<server::Reply> DiscoveryRequests::handle(const Request& request) {
    const std::string host = host_field(request.fields);
    const bool refresh = refresh_field(request.fields);
    const discovery::DiscoveryAnswer answer = co_await discovery_.discover(host, refresh);
    co_return server::Reply{reply::discovery(host, answer)};
}

}  // namespace hostkeeper::daemon::handlers
