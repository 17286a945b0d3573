#pragma once
// Where the token life cycle (token_lifecycle.hpp) reads and writes a host's
// credentials: the read-through cache in front of the keyring
// (credential_cache.hpp), or a stand-in in tests.

#include <boost/asio/awaitable.hpp>
#include <optional>
#include <string>

#include "proto/secret.hpp"

namespace hostkeeper::daemon::credentials {

// A copy of `secret` (for each caller sharing one lookup).
inline std::optional<proto::Secret> clone_optional(const std::optional<proto::Secret>& secret) {
    if (!secret) return std::nullopt;
    return secret->clone();
}

class CredentialStore {
  public:
    CredentialStore() = default;
    CredentialStore(const CredentialStore&) = delete;
    CredentialStore& operator=(const CredentialStore&) = delete;
    virtual ~CredentialStore() = default;

    // The host's credentials object (compact JSON text), or nullopt.
    virtual boost::asio::awaitable<std::optional<proto::Secret>> read(std::string host) = 0;
    virtual boost::asio::awaitable<void> write(std::string host, proto::Secret credentials) = 0;
    virtual boost::asio::awaitable<void> remove(std::string host) = 0;
};

}  // namespace hostkeeper::daemon::credentials
