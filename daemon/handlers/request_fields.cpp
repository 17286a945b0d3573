#include "daemon/handlers/request_fields.hpp"

#include "proto/error.hpp"
#include "proto/hostname.hpp"

namespace hostkeeper::daemon::handlers {
using proto::Error;
using proto::ErrorCode;
using proto::Json;

std::string host_field(const Json& request) {
    const auto host = request.find("host");
    if (host == request.end() || !host->is_string()) {
        throw Error(ErrorCode::bad_request, "request needs a \"host\" string");
    }
    return proto::normalize_hostname(host->get_ref<const std::string&>());
}

const std::string* text_field(const Json& request, const char* name, bool required) {
    const auto it = request.find(name);
    if (it == request.end()) {
        if (required)
            throw Error(ErrorCode::bad_request,
                        std::string("request needs a \"") + name + "\" string");
        return nullptr;
    }
    if (!it->is_string())
        throw Error(ErrorCode::bad_request, std::string("\"") + name + "\" must be a string");
    return &it->get_ref<const std::string&>();
}

bool refresh_field(const Json& request) {
    const auto it = request.find("refresh");
    if (it == request.end()) return false;
    if (!it->is_boolean()) throw Error(ErrorCode::bad_request, "\"refresh\" must be true or false");
    return it->get<bool>();
}

std::optional<proto::VersionConstraints> constraint_field(const Json& request) {
    const std::string* text = text_field(request, "constraint", false);
    if (text == nullptr) return std::nullopt;
    return proto::VersionConstraints::parse(*text);
}

}  // namespace hostkeeper::daemon::handlers
