#include "discovery_requests.hpp"

#include "replies.hpp"

namespace hostkeeper::daemon {

boost::asio::awaitable<Reply> DiscoveryRequests::handle(const Request& request) {
    const std::string host = host_field(request.fields);
    const bool refresh = refresh_field(request.fields);
    const DiscoveryAnswer answer = co_await discovery_.discover(host, refresh);
    co_return Reply{reply::discovery(host, answer)};
}

}  // namespace hostkeeper::daemon
