// hostkeeper migrate's edit of the user's config.toml: for any text, either
// a FileError (not valid TOML, keyring no table) and nothing else, or a text
// that is valid TOML whose keyring.backend is the backend written, and which
// the same edit leaves as it is.
#include <toml++/toml.h>

#include <string>

#include "fuzz_support.hpp"
#include "helper/cli/keyring_config.hpp"
#include "proto/file_io.hpp"

using namespace hostkeeper;

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
    const std::string text(fuzz::text_of(data, size));
    std::string edited;
    try {
        edited = helper::cli::with_keyring_backend(text, "pass");
    } catch (const proto::FileError&) {
        return 0;
    }
    toml::table parsed;
    try {
        parsed = toml::parse(edited);
    } catch (const toml::parse_error&) {
        fuzz::require(false, "the edited text is not valid TOML");
    }
    fuzz::require(parsed["keyring"]["backend"].value<std::string>() == std::string("pass"),
                  "the edited text's keyring.backend is not \"pass\"");
    fuzz::require(helper::cli::with_keyring_backend(edited, "pass") == edited,
                  "editing the edited text again changed it");
    return 0;
}
