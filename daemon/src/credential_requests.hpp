#pragma once
// The credentials requests: get, store, forget (PROTOCOL.md).

// clang-format off
#include <utility>  // before Asio: boost 1.74 awaitable.hpp uses std::exchange unincluded
// clang-format on
#include <boost/asio/awaitable.hpp>

#include "credential_service.hpp"
#include "request_fields.hpp"
#include "request_handler.hpp"

namespace hostkeeper::daemon {

class CredentialRequests {
  public:
    explicit CredentialRequests(CredentialService& credentials) : credentials_(credentials) {}
    // Throws proto::Error.
    boost::asio::awaitable<Reply> handle(const Request& request);

  private:
    CredentialService& credentials_;
};

}  // namespace hostkeeper::daemon
