#pragma once
// The credentials requests: get, store, forget (PROTOCOL.md).

#include <boost/asio/awaitable.hpp>
#include <utility>

#include "daemon/handlers/request_fields.hpp"
#include "daemon/server/request_handler.hpp"

// Held by reference: declared, not included.
namespace hostkeeper::daemon::credentials {
class CredentialService;
}

namespace hostkeeper::daemon::handlers {

class CredentialRequests {
  public:
    explicit CredentialRequests(credentials::CredentialService& credentials)
        : credentials_(credentials) {}
    // Throws proto::Error.
    boost::asio::awaitable<server::Reply> handle(const Request& request);

  private:
    credentials::CredentialService& credentials_;
};

}  // namespace hostkeeper::daemon::handlers
