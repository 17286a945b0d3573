#include "proto/services.hpp"

#include <cctype>

namespace hostkeeper::proto {

bool is_service_id(std::string_view id) {
    // As Terraform's svchost/disco parseServiceID: the name up to the first
    // dot, then a version ("v2", "v2.1").
    const auto dot = id.find('.');
    if (dot == std::string_view::npos || dot == 0 || dot + 2 >= id.size() || id[dot + 1] != 'v')
        return false;
    for (const char c : id.substr(0, dot)) {
        if (std::isalnum(static_cast<unsigned char>(c)) == 0 && c != '-' && c != '_') return false;
    }
    bool digit = false;  // the segment so far has a digit
    for (const char c : id.substr(dot + 2)) {
        if (c == '.') {
            if (!digit) return false;
            digit = false;
        } else if (std::isdigit(static_cast<unsigned char>(c)) != 0) {
            digit = true;
        } else {
            return false;
        }
    }
    return digit;
}

std::vector<std::string> other_versions(const Json& services, std::string_view id) {
    std::vector<std::string> others;
    if (!services.is_object()) return others;
    const std::string_view name = id.substr(0, id.find('.'));
    for (const auto& item : services.items()) {
        const std::string& key = item.key();
        if (key != id && key.size() > name.size() + 1 && key.compare(0, name.size(), name) == 0 &&
            key[name.size()] == '.' && is_service_id(key)) {
            others.push_back(key);
        }
    }
    return others;
}

}  // namespace hostkeeper::proto
