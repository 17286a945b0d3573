// What a login.v1 token endpoint answers, as hostkeeperd reads it
// (parse_token_response, token_error). An accepted answer has an access
// token and a positive lifetime when it has one; a refusal never quotes
// the body; a server's error text is printable and short.
#include <string>

#include "daemon/discovery/login_token.hpp"
#include "fuzz_support.hpp"

using namespace hostkeeper;

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
    const std::string_view text = fuzz::text_of(data, size);
    try {
        const auto tokens = daemon::discovery::parse_token_response(text);
        fuzz::require(!tokens.access_token.view().empty(), "an accepted access token is empty");
        fuzz::require(!tokens.expires_in || tokens.expires_in->count() >= 1,
                      "an accepted expires_in is under 1 second");
        fuzz::require(!tokens.refresh_token || !tokens.refresh_token->view().empty(),
                      "an accepted refresh token is empty");
    } catch (const daemon::discovery::TokenResponseError& e) {
        const std::string message = e.what();
        fuzz::require(!message.empty(), "a refusal says nothing");
        fuzz::require(message.size() < 200, "a refusal is long enough to quote the body");
    }
    const std::string error = daemon::discovery::token_error(text);
    fuzz::require(error.size() <= 300, "a server's error text is over 300 bytes");
    for (const char c : error)
        fuzz::require(static_cast<unsigned char>(c) >= 0x20 && c != 0x7f,
                      "a server's error text holds a control character");
    return 0;
}
