#pragma once
// The socket requests of the registry clients (module_versions,
// module_download, provider_versions, provider_package): fields checked,
// RegistryService asked, the answer made (see proto/PROTOCOL.md).

#include <utility>  // before Asio: boost 1.74 awaitable.hpp uses std::exchange unincluded
#include <string>

#include <boost/asio/awaitable.hpp>

#include "hostkeeper/proto/messages.hpp"
#include "registry_service.hpp"

namespace hostkeeper::daemon {

// The response payload for `request`, whose op is one of the four above.
// Throws proto::Error (and its RegistryError, DiscoveryError kinds).
boost::asio::awaitable<std::string> answer_registry_request(RegistryService& registry, proto::Op op,
                                                            const proto::Json& request);

}  // namespace hostkeeper::daemon
