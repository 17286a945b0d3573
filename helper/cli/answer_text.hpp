#pragma once
// Text out of the daemon's JSON answers, for the commands' output.

#include <string>
#include <vector>

#include "proto/json.hpp"

namespace hostkeeper::helper::cli {

// The string member `key` of `object`; `fallback` when it is missing or not a string.
inline std::string text_of(const proto::Json& object, const char* key,
                           const std::string& fallback = {}) {
    const auto it = object.find(key);
    return it != object.end() && it->is_string() ? it->get<std::string>() : fallback;
}

// The items of `list` separated by ", ".
inline std::string joined(const std::vector<std::string>& list) {
    std::string text;
    for (const auto& item : list) text += (text.empty() ? "" : ", ") + item;
    return text;
}

}  // namespace hostkeeper::helper::cli
