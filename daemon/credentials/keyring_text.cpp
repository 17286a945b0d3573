#include "daemon/credentials/keyring_text.hpp"

#include "proto/error.hpp"
#include "proto/json.hpp"
#include "proto/messages.hpp"

namespace hostkeeper::daemon::credentials {
using proto::Error;
using proto::ErrorCode;
using proto::Secret;

Secret credentials_from_keyring_text(const std::string& host, const Secret& text) {
    proto::Json object;
    try {
        object = proto::parse_json(text.view());
    } catch (const proto::JsonError& e) {
        // Not JSON at all may still be a bare token (below); nested too deeply is not.
        if (!text.view().empty() && (text.view().front() == '{' || text.view().front() == '[')) {
            throw Error(ErrorCode::keyring_error,
                        "the keyring item for " + host + " is " + e.what() +
                            "; store it again (terraform login " + host + ")");
        }
    }
    const proto::ScrubGuard guard(object);
    if (object.is_object()) {
        proto::validate_credentials(object);
        std::string compact = object.dump();
        if (compact.size() > proto::kMaxCredentialsSize) {
            proto::scrub(compact);
            throw Error(ErrorCode::keyring_error, "the keyring item for " + host + " is over " +
                                                      std::to_string(proto::kMaxCredentialsSize) +
                                                      " bytes");
        }
        return Secret::adopt(compact);
    }
    const std::string_view raw = text.view();
    const bool bare_token = !raw.empty() && raw.size() <= proto::kMaxCredentialsSize &&
                            raw.find_first_of(" \t\r\n\"\\{}") == std::string_view::npos;
    if (!bare_token) {
        throw Error(ErrorCode::keyring_error,
                    "the keyring item for " + host +
                        " holds neither a JSON object nor a bare token; store "
                        "it again (terraform login " +
                        host + ")");
    }
    proto::Json wrapped = {{"token", std::string(raw)}};
    const proto::ScrubGuard wrapped_guard(wrapped);
    std::string compact = wrapped.dump();
    return Secret::adopt(compact);
}

}  // namespace hostkeeper::daemon::credentials
