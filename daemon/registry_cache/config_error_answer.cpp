#include "daemon/registry_cache/config_error_answer.hpp"

#include <exception>

#include "daemon/registry_cache/error_answers.hpp"

namespace hostkeeper::daemon::registry_cache {

ListenerResponse config_error_answer(const std::string& reason) {
    const std::string message = "hostkeeperd cannot run with its configuration: " + reason;
    try {
        return error_response(503, message);
    } catch (const std::exception&) {
        // Not UTF-8: the reason phrase's printable ASCII stands for it.
        return error_response(503, reason_phrase(message));
    }
}

}  // namespace hostkeeper::daemon::registry_cache
