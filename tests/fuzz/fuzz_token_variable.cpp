// TF_TOKEN_* names from the environment (shadowing detection, exec's
// replacement of the caller's variables): decoding never throws; a decoded
// host is normalized; when a host can be encoded, its name decodes back to
// it; and a host's encoding, when there is one, is that same round trip.
#include "fuzz_support.hpp"
#include "helper/terraform_config/token_variables.hpp"
#include "proto/hostname.hpp"

using namespace hostkeeper;
using helper::terraform_config::decode_token_variable;
using helper::terraform_config::encode_token_variable;

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
    const std::string_view text = fuzz::text_of(data, size);
    // As a variable name (with and without the prefix the input may lack).
    for (const std::string& name :
         {std::string(text),
          std::string(helper::terraform_config::kTokenVariablePrefix) + std::string(text)}) {
        const auto host = decode_token_variable(name);
        if (!host) continue;
        fuzz::require(proto::normalize_hostname(*host) == *host,
                      "a decoded TF_TOKEN_ name is not a normalized host");
        const auto encoded = encode_token_variable(*host);
        fuzz::require(!encoded || decode_token_variable(*encoded) == host,
                      "an encoded name does not decode to its host");
    }
    // As a host.
    if (const auto encoded = encode_token_variable(text)) {
        fuzz::require(decode_token_variable(*encoded) == std::optional<std::string>(text),
                      "encode_token_variable gave a name that does not decode to the host");
    }
    return 0;
}
