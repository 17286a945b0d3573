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

bool flag_field(const Json& request, const char* name) {
    const auto it = request.find(name);
    if (it == request.end()) return false;
    if (!it->is_boolean())
        throw Error(ErrorCode::bad_request, std::string("\"") + name + "\" must be true or false");
    return it->get<bool>();
}

bool refresh_field(const Json& request) {
    return flag_field(request, "refresh");
}

std::optional<proto::VersionConstraints> constraint_field(const Json& request) {
    const std::string* text = text_field(request, "constraint", false);
    if (text == nullptr) return std::nullopt;
    return proto::VersionConstraints::parse(*text);
}

namespace {

// An optional string field where null is absent too: "" then.
std::string optional_text(const Json& request, const char* name) {
    const auto it = request.find(name);
    if (it == request.end() || it->is_null()) return {};
    return *text_field(request, name, true);
}

}  // namespace

proto::GitItemKey git_key_fields(const Json& request) {
    proto::check_git_protocol(*text_field(request, "protocol", true));
    proto::GitItemKey key;
    key.host = proto::git_host(*text_field(request, "host", true));
    key.path = proto::git_path(optional_text(request, "path"));
    key.username = proto::git_username(optional_text(request, "username"));
    return key;
}

std::optional<std::uint64_t> git_expiry_field(const Json& request) {
    const auto it = request.find("password_expiry_utc");
    if (it == request.end() || it->is_null()) return std::nullopt;
    if (it->is_number_unsigned()) return it->get<std::uint64_t>();
    if (it->is_string()) {
        if (auto value = proto::parse_git_expiry(it->get_ref<const std::string&>())) return value;
    }
    throw Error(ErrorCode::bad_request,
                "\"password_expiry_utc\" must be Unix seconds (a whole number of 0 or more)");
}

}  // namespace hostkeeper::daemon::handlers
