#include "daemon/registry_cache/error_answers.hpp"

#include <cstddef>
#include <utility>

#include "proto/json.hpp"

namespace hostkeeper::daemon::registry_cache {

namespace {
constexpr std::size_t kMaxReason = 400;
}  // namespace

std::string reason_phrase(std::string text) {
    for (char& c : text) {
        if (static_cast<unsigned char>(c) < 0x20 || static_cast<unsigned char>(c) >= 0x7f) c = ' ';
    }
    if (text.size() > kMaxReason) text = text.substr(0, kMaxReason - 3) + "...";
    return text;
}

ListenerResponse error_response(unsigned status, const std::string& message) {
    ListenerResponse out;
    out.status = status;
    // Throws for a message that is not UTF-8 (a request's path): the
    // listener answers such a request with 400.
    out.body = proto::Json{{"errors", proto::Json::array({message})}}.dump();
    out.reason = reason_phrase(message);
    return out;
}

}  // namespace hostkeeper::daemon::registry_cache
