#pragma once
// What a desktop notification says of a token's expiry: a summary naming
// the host and the stage, and a body saying what to run. Never a token.

#include <string>

#include "daemon/credentials/token_standing.hpp"

namespace hostkeeper::daemon::credentials {

struct ExpiryNotice {
    std::string summary;
    std::string body;
};

// "The token of HOST expires in 7 days" / "... has expired", and the
// commands that give the host a new token.
ExpiryNotice expiry_notice(const ExpiryAlert& alert);

}  // namespace hostkeeper::daemon::credentials
