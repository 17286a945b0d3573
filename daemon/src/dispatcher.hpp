#pragma once
// Turns one request payload into one response payload: version and shape
// checks, then a call on a service. No I/O of its own; never throws for bad
// input (every problem becomes an error response).

#include <utility>  // before Asio: boost 1.74 awaitable.hpp uses std::exchange unincluded
#include <cstddef>
#include <optional>
#include <string>
#include <string_view>

#include <boost/asio/awaitable.hpp>

#include "credential_service.hpp"
#include "discovery_service.hpp"
#include "hostkeeper/proto/messages.hpp"
#include "registry_service.hpp"
#include "request_handler.hpp"

namespace hostkeeper::daemon {

// What the dispatcher needs from the daemon around it.
class DaemonControl {
public:
    DaemonControl() = default;
    DaemonControl(const DaemonControl&) = delete;
    DaemonControl& operator=(const DaemonControl&) = delete;
    virtual ~DaemonControl() = default;
    // The "daemon" object of a status response.
    virtual proto::Json describe() const = 0;
    // Stop after the current responses are written.
    virtual void request_stop() = 0;
};

class Dispatcher final : public RequestHandler {
public:
    Dispatcher(CredentialService& credentials, DiscoveryService& discovery, RegistryService& registry,
               DaemonControl& control)
        : credentials_(credentials), discovery_(discovery), registry_(registry), control_(control) {}

    boost::asio::awaitable<std::string> handle(std::string_view payload) override;

private:
    boost::asio::awaitable<std::string> dispatch(proto::Op op, proto::Json& request);
    boost::asio::awaitable<std::string> discover(const proto::Json& request);
    proto::Json status() const;

    CredentialService& credentials_;
    DiscoveryService& discovery_;
    RegistryService& registry_;
    DaemonControl& control_;
};

}  // namespace hostkeeper::daemon
