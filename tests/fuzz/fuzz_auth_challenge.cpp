// WWW-Authenticate header values of an OCI registry's 401 (NUL bytes
// separate several headers). Schemes and parameter names come out
// lowercase and non-empty; the caps hold; a Bearer challenge has a realm.
#include <string>
#include <vector>

#include "daemon/fleet/auth_challenge.hpp"
#include "fuzz_support.hpp"

using namespace hostkeeper;
using namespace hostkeeper::daemon::fleet;

namespace {

bool lowercase(const std::string& text) {
    for (const char c : text)
        if (c >= 'A' && c <= 'Z') return false;
    return !text.empty();
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
    const std::vector<std::string> headers = fuzz::split_all_at_nul(fuzz::text_of(data, size));
    try {
        const std::vector<Challenge> challenges = parse_challenges(headers);
        fuzz::require(challenges.size() <= kMaxChallenges, "over the challenge cap");
        for (const Challenge& challenge : challenges) {
            fuzz::require(lowercase(challenge.scheme), "a scheme empty or not lowercase");
            fuzz::require(challenge.params.size() <= kMaxChallengeParameters, "over the cap");
            for (const auto& [name, value] : challenge.params)
                fuzz::require(lowercase(name), "a parameter name empty or not lowercase");
        }
        if (const auto bearer = bearer_challenge(challenges))
            fuzz::require(!bearer->realm.empty(), "a Bearer challenge without a realm");
    } catch (const ChallengeError&) {
    }
    return 0;
}
