#pragma once
// The requests about the keyring backend itself: migrate (move every item
// to the other backend) and unlock (PROTOCOL.md).

#include <boost/asio/awaitable.hpp>

#include "daemon/handlers/request_fields.hpp"
#include "daemon/server/request_handler.hpp"

namespace hostkeeper::daemon::backends {
class KeyringAdmin;
}
namespace hostkeeper::daemon::credentials {
class CredentialService;
}

namespace hostkeeper::daemon::handlers {

class KeyringRequests {
  public:
    KeyringRequests(backends::KeyringAdmin& keyring, credentials::CredentialService& credentials)
        : keyring_(keyring), credentials_(credentials) {}
    // Throws proto::Error.
    boost::asio::awaitable<server::Reply> handle(const Request& request);

  private:
    backends::KeyringAdmin& keyring_;
    credentials::CredentialService& credentials_;
};

}  // namespace hostkeeper::daemon::handlers
