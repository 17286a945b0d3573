// What a token command prints, as hostkeeperd reads it (read_command_output;
// its expires_at is fuzz_token_expiry's reader). An accepted output has a token
// that can be sent as a bearer token and at most one expiry; a refusal
// never quotes the output.
#include <algorithm>
#include <string>

#include "daemon/credentials/command_output.hpp"
#include "fuzz_support.hpp"

using namespace hostkeeper;

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
    const std::string_view text = fuzz::text_of(data, size);
    try {
        const auto output = daemon::credentials::read_command_output(text);
        const std::string_view token = output.token.view();
        fuzz::require(!token.empty(), "an accepted token is empty");
        fuzz::require(
            std::all_of(token.begin(), token.end(), [](char c) { return c > ' ' && c < 0x7f; }),
            "an accepted token holds a space or a control character");
        fuzz::require(!(output.expires_at && output.expires_in),
                      "an accepted output has two expiries");
        fuzz::require(!output.expires_in || output.expires_in->count() >= 1,
                      "an accepted expires_in is under 1 second");
    } catch (const daemon::credentials::CommandOutputError& e) {
        const std::string message = e.what();
        fuzz::require(!message.empty(), "a refusal says nothing");
        fuzz::require(message.size() < 200, "a refusal is long enough to quote the output");
    }
    return 0;
}
