#include "daemon/credentials/stored_object.hpp"

#include <exception>

#include "proto/error.hpp"

namespace hostkeeper::daemon::credentials {

proto::Json stored_object(const proto::Secret& text, const std::string& what) {
    proto::Json json;
    try {
        json = proto::parse_json(text.view());
    } catch (const std::exception&) {
        // Nothing of it is quoted: it may hold a secret.
    }
    if (!json.is_object()) {
        proto::scrub(json);
        throw proto::Error(proto::ErrorCode::keyring_error, what + " does not hold a JSON object");
    }
    return json;
}

const std::string& stored_string(const proto::Json& object, const char* name,
                                 const std::string& what, const char* otherwise) {
    const auto found = object.find(name);
    if (found == object.end() || !found->is_string()) {
        throw proto::Error(proto::ErrorCode::keyring_error,
                           what + " has no string \"" + name + "\"" + otherwise);
    }
    return found->get_ref<const std::string&>();
}

}  // namespace hostkeeper::daemon::credentials
