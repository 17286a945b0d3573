#pragma once
// The credentials requests: get, store, forget (PROTOCOL.md).

// clang-format off
#include <utility>  // before Asio: boost 1.74 awaitable.hpp uses std::exchange unincluded
// clang-format on
#include <boost/asio/awaitable.hpp>

#include "daemon/credentials/credential_service.hpp"
#include "daemon/handlers/request_fields.hpp"
#include "daemon/server/request_handler.hpp"

namespace hostkeeper::daemon::handlers {

class CredentialRequests {
  public:
    explicit CredentialRequests(credentials::CredentialService& credentials) : credentials_(credentials) {}
    // Throws proto::Error.
    boost::asio::awaitable<server::Reply> handle(const Request& request);

  private:
    credentials::CredentialService& credentials_;
};

}  // namespace hostkeeper::daemon::handlers
