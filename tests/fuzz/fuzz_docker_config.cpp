// Docker's client configuration, as the fleet tier reads its credentials
// from it: either USER:PASSWORD (with a colon) for the host, none, or an
// error that never quotes what was read; the credential helper it names
// (never a path); a helper's answer read as USER:SECRET.
#include <stdexcept>
#include <string>

#include "daemon/fleet/docker_config.hpp"
#include "fuzz_support.hpp"

using namespace hostkeeper;
using namespace hostkeeper::daemon::fleet;

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
    const std::string_view text = fuzz::text_of(data, size);
    try {
        const auto found = docker_auth(text, "oci.example:5000");
        if (found) fuzz::require(found->view().find(':') != std::string_view::npos, "no colon");
    } catch (const std::runtime_error& e) {
        const std::string message = e.what();
        fuzz::require(message.size() < 400, "a message that may quote the input");
    }
    try {
        const auto helper = docker_helper(text, "oci.example:5000");
        if (helper)
            fuzz::require(helper->find('/') == std::string::npos, "a helper name with a slash");
    } catch (const std::runtime_error& e) {
        fuzz::require(std::string(e.what()).size() < 400, "a message that may quote the input");
    }
    try {
        const auto answer = helper_credentials(text);
        fuzz::require(answer.view().find(':') != std::string_view::npos, "no colon");
    } catch (const std::runtime_error& e) {
        fuzz::require(std::string(e.what()).size() < 400, "a message that may quote the input");
    }
    return 0;
}
