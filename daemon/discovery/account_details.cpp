#include "daemon/discovery/account_details.hpp"

#include "proto/json.hpp"

namespace hostkeeper::daemon::discovery {

std::string account_username(std::string_view body) {
    try {
        const proto::Json document = proto::parse_json(body);
        const proto::Json* node = &document;
        for (const char* key : {"data", "attributes", "username"}) {
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

}  // namespace hostkeeper::daemon::discovery
