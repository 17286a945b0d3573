#include "daemon/handlers/registry_port_requests.hpp"

#include <utility>

#include "daemon/registry_cache/gate.hpp"

namespace hostkeeper::daemon::handlers {
namespace asio = boost::asio;

server::HttpAnswer http_answer(registry_cache::ListenerResponse response) {
    server::HttpAnswer out;
    out.status = response.status;
    out.reason = std::move(response.reason);
    out.content_type = std::move(response.content_type);
    out.body = std::move(response.body);
    out.headers = std::move(response.headers);
    out.file = std::move(response.file);
    out.authorized = response.authorized;
    return out;
}

asio::awaitable<server::HttpAnswer> RegistryPortRequests::answer(server::HttpRequest request) {
    registry_cache::ListenerRequest asked;
    asked.target = std::move(request.target);
    asked.host_header = std::move(request.host_header);
    asked.authorization = std::move(request.authorization);
    asked.browser_header = std::move(request.browser_header);
    auto serving = gate_.serve(std::move(asked));  // named first (async/toolchain.hpp)
    registry_cache::ListenerResponse response = co_await std::move(serving);
    co_return http_answer(std::move(response));
}

}  // namespace hostkeeper::daemon::handlers
