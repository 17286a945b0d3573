#include "daemon/handlers/registry_port_requests.hpp"

#include <utility>

#include "daemon/registry_cache/gate.hpp"

namespace hostkeeper::daemon::handlers {
namespace asio = boost::asio;

asio::awaitable<server::HttpAnswer> RegistryPortRequests::answer(server::HttpRequest request) {
    auto serving = gate_.serve(std::move(request));  // named first (async/toolchain.hpp)
    co_return co_await std::move(serving);
}

}  // namespace hostkeeper::daemon::handlers
