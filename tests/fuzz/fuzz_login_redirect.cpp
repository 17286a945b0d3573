// The request `hostkeeper login` reads on its loopback port
// (read_redirect): an accepted redirect has a code, and is a GET of /login
// with this login's state; anything else is a RedirectError.
#include <string>

#include "fuzz_support.hpp"
#include "helper/cli/login_redirect.hpp"

using namespace hostkeeper;

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
    const std::string_view text = fuzz::text_of(data, size);
    try {
        const auto redirect = helper::cli::read_redirect(text, "state-1");
        fuzz::require(!redirect.is_login || !redirect.code.empty(), "an accepted code is empty");
        fuzz::require(!redirect.is_login || text.find("state-1") != std::string_view::npos,
                      "a redirect was accepted without this login's state");
        fuzz::require(text.starts_with("GET "), "a request that is no GET was accepted");
    } catch (const helper::cli::RedirectError& e) {
        fuzz::require(std::string(e.what()).size() < 700, "a refusal is too long");
    }
    return 0;
}
