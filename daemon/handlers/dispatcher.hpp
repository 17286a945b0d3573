#pragma once
// Turns one request payload into one reply: the payload parsed, its version
// and op checked, then routed to the handler of its family (credentials,
// discovery, registry, control). No I/O of its own; never throws for bad
// input (every problem becomes an error reply).

#include <boost/asio/awaitable.hpp>
#include <string_view>
#include <utility>

#include "daemon/handlers/control_requests.hpp"
#include "daemon/handlers/credential_requests.hpp"
#include "daemon/handlers/daemon_info.hpp"
#include "daemon/handlers/discovery_requests.hpp"
#include "daemon/handlers/item_requests.hpp"
#include "daemon/handlers/keyring_requests.hpp"
#include "daemon/handlers/registry_requests.hpp"
#include "daemon/server/request_handler.hpp"

namespace hostkeeper::daemon::handlers {

class Dispatcher final : public server::RequestHandler {
  public:
    // `daemon` is described in status and keyring_unavailable replies.
    Dispatcher(credentials::CredentialService& credentials, credentials::KeyringItems& items,
               discovery::DiscoveryService& discovery, registry::RegistryService& registry,
               registry_cache::RegistryCache& cache, backends::KeyringAdmin& keyring,
               DaemonInfo daemon)
        : daemon_(std::move(daemon)),
          credentials_(credentials.tokens(), cache),
          items_(items, credentials, discovery, keyring),
          discovery_(discovery),
          registry_(registry),
          keyring_(keyring, credentials),
          control_(credentials, discovery, registry, cache, keyring, daemon_) {}

    boost::asio::awaitable<server::Reply> handle(std::string_view payload,
                                                 server::ServerState server) override;

  private:
    boost::asio::awaitable<server::Reply> route(const Request& request);

    DaemonInfo daemon_;
    CredentialRequests credentials_;
    ItemRequests items_;
    DiscoveryRequests discovery_;
    RegistryRequests registry_;
    KeyringRequests keyring_;
    ControlRequests control_;
};

}  // namespace hostkeeper::daemon::handlers
