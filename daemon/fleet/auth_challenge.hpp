#pragma once
// What an OCI registry's 401 asks for: its WWW-Authenticate challenges
// (RFC 9110 section 11.6.1), of which the fleet tier answers "Bearer" (the
// token service of OCI Distribution and Docker: realm, service, scope) and
// "Basic". Pure.

#include <cstddef>
#include <map>
#include <optional>
#include <stdexcept>
#include <string>
#include <vector>

namespace hostkeeper::daemon::fleet {

// Challenges, parameters and bytes read at most, across all headers.
inline constexpr std::size_t kMaxChallenges = 16;
inline constexpr std::size_t kMaxChallengeParameters = 32;
inline constexpr std::size_t kMaxChallengeText = std::size_t{16} * 1024;

// Headers that are not challenges, or too many or too long. The message says
// what is wrong and where, never quoting a value.
class ChallengeError : public std::runtime_error {
  public:
    using std::runtime_error::runtime_error;
};

struct Challenge {
    std::string scheme;                         // lowercased: "bearer", "basic", ...
    std::map<std::string, std::string> params;  // names lowercased; values unquoted
    std::string token68;                        // the other form's credentials, if given
};

// Every challenge of every WWW-Authenticate header value, in order. Throws
// ChallengeError.
std::vector<Challenge> parse_challenges(const std::vector<std::string>& headers);

struct BearerChallenge {
    std::string realm;    // the token service's URL
    std::string service;  // "" when not given
    std::string scope;    // "" when not given
};

// The first Bearer challenge that names a realm; nullopt when there is none.
std::optional<BearerChallenge> bearer_challenge(const std::vector<Challenge>& challenges);

// Whether one of the challenges is Basic.
bool asks_basic(const std::vector<Challenge>& challenges);

}  // namespace hostkeeper::daemon::fleet
