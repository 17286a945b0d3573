// A token service's answer. A token read is printable ASCII without
// spaces (it goes into a header) and lasts between the protocol's 60 s and
// this client's hour.
#include "daemon/fleet/registry_token.hpp"
#include "fuzz_support.hpp"

using namespace hostkeeper;
using namespace hostkeeper::daemon::fleet;

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
    try {
        const RegistryToken token = parse_registry_token(fuzz::text_of(data, size));
        fuzz::require(!token.token.empty(), "an empty token");
        for (const char c : token.token.view())
            fuzz::require(c > 0x20 && c < 0x7f, "a token byte that cannot go into a header");
        fuzz::require(token.expires_in >= kDefaultRegistryTokenLife &&
                          token.expires_in <= kMaxRegistryTokenLife,
                      "a lifetime outside [60 s, 1 h]");
    } catch (const RegistryTokenError&) {
    }
    return 0;
}
