#pragma once
// What an OCI registry's token service answers to a Bearer challenge
// (the Docker Registry token authentication that OCI registries share):
// {"token": "...", "expires_in": 300} or the OAuth 2.0 spelling
// "access_token". Pure.

#include <chrono>
#include <cstddef>
#include <stdexcept>
#include <string_view>

#include "proto/secret.hpp"

namespace hostkeeper::daemon::fleet {

inline constexpr std::size_t kMaxRegistryTokenAnswer = std::size_t{64} * 1024;
// A token is used at most this long, whatever the service says, and at least
// the protocol's default when it says less.
inline constexpr std::chrono::seconds kMaxRegistryTokenLife{3600};
inline constexpr std::chrono::seconds kDefaultRegistryTokenLife{60};

// An answer that holds no usable token: the message says what is wrong,
// never quoting a token.
class RegistryTokenError : public std::runtime_error {
  public:
    using std::runtime_error::runtime_error;
};

struct RegistryToken {
    proto::Secret token;
    std::chrono::seconds expires_in{kDefaultRegistryTokenLife};
};

// The body of a 200 answer. "token" wins over "access_token" when both are
// there (the protocol's rule). Throws RegistryTokenError: not a JSON object,
// over kMaxRegistryTokenAnswer, no token, a token that is not printable
// ASCII without spaces (it goes into a header), an "expires_in" that is not
// a whole number of seconds.
RegistryToken parse_registry_token(std::string_view body);

}  // namespace hostkeeper::daemon::fleet
