#include "daemon/fleet/registry_token.hpp"

#include <algorithm>
#include <string>

#include "proto/json.hpp"

namespace hostkeeper::daemon::fleet {

namespace {

// Tokens are JWTs or opaque words; they travel in an Authorization header.
bool header_safe(std::string_view token) {
    return !token.empty() && token.size() <= std::size_t{16} * 1024 &&
           std::all_of(token.begin(), token.end(), [](char c) { return c > 0x20 && c < 0x7f; });
}

}  // namespace

RegistryToken parse_registry_token(std::string_view body) {
    if (body.size() > kMaxRegistryTokenAnswer)
        throw RegistryTokenError("the token service's answer is over " +
                                 std::to_string(kMaxRegistryTokenAnswer) + " bytes");
    proto::Json answer;
    try {
        answer = proto::parse_json(body, 4);
    } catch (const proto::JsonError& e) {
        throw RegistryTokenError(std::string("the token service's answer is not JSON: ") +
                                 e.what());
    }
    proto::ScrubGuard scrub_answer(answer);
    if (!answer.is_object())
        throw RegistryTokenError("the token service's answer is not a JSON object");
    const char* field = answer.contains("token") ? "token" : "access_token";
    const auto found = answer.find(field);
    if (found == answer.end())
        throw RegistryTokenError("the token service's answer holds no token");
    if (!found->is_string() || !header_safe(found->get_ref<const std::string&>()))
        throw RegistryTokenError(std::string("the token service's \"") + field +
                                 "\" is not a token (printable ASCII without spaces)");
    RegistryToken token;
    token.token = proto::Secret(found->get_ref<const std::string&>());
    if (const auto expires = answer.find("expires_in"); expires != answer.end()) {
        if (!expires->is_number_integer() && !expires->is_number_unsigned())
            throw RegistryTokenError(
                "the token service's \"expires_in\" is not a whole number of seconds");
        const auto seconds = expires->get<long long>();
        token.expires_in = std::clamp(std::chrono::seconds(seconds), kDefaultRegistryTokenLife,
                                      kMaxRegistryTokenLife);
    }
    return token;
}

}  // namespace hostkeeper::daemon::fleet
