#include "daemon/discovery/account_details.hpp"

#include <initializer_list>

#include "proto/json.hpp"

namespace hostkeeper::daemon::discovery {

namespace {

// The string at `path` in the body, or "".
std::string string_at(std::string_view body, std::initializer_list<const char*> path) {
    try {
        const proto::Json document = proto::parse_json(body);
        const proto::Json* node = &document;
        for (const char* key : path) {
            if (!node->is_object()) return {};
            const auto it = node->find(key);
            if (it == node->end()) return {};
            node = &*it;
        }
        return node->is_string() ? node->get<std::string>() : std::string();
    } catch (const std::exception&) {
        return {};
    }
}

}  // namespace

std::string account_username(std::string_view body) {
    return string_at(body, {"data", "attributes", "username"});
}

std::string account_user_id(std::string_view body) {
    return string_at(body, {"data", "id"});
}

}  // namespace hostkeeper::daemon::discovery
