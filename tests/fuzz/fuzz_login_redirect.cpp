// The request `hostkeeper login` reads on its loopback port
// (read_redirect): an accepted redirect has a code, and is a GET of /login
// with this login's state; an error redirect ends the login only with this
// login's state; anything else is a RedirectError whose message (shown on
// the page answered) quotes nothing of the request.
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
    } catch (const helper::cli::LoginRefused& e) {
        fuzz::require(std::string(e.what()).size() < 700, "a refusal is too long");
        fuzz::require(text.find("state-1") != std::string_view::npos,
                      "an error redirect without this login's state ended the login");
    } catch (const helper::cli::RedirectError& e) {
        fuzz::require(std::string(e.what()).find('<') == std::string::npos,
                      "a stray request's message quotes the request");
    }
    return 0;
}
