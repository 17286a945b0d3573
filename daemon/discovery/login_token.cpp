#include "daemon/discovery/login_token.hpp"

#include <strings.h>

#include "proto/json.hpp"
#include "proto/printable.hpp"

namespace hostkeeper::daemon::discovery {
using proto::Json;

namespace {

// A token response nests one level; anything deeper is refused unread.
constexpr std::size_t kMaxTokenDepth = 4;
constexpr long long kMaxExpiresIn = 10LL * 366 * 24 * 3600;
constexpr std::size_t kMaxOAuthErrorText = 300;

Json token_object(std::string_view body) {
    if (body.size() > kMaxTokenResponse)
        throw TokenResponseError("the token response is over " + std::to_string(kMaxTokenResponse) +
                                 " bytes");
    Json object;
    try {
        object = proto::parse_json(body, kMaxTokenDepth);
    } catch (const proto::JsonError& e) {
        throw TokenResponseError(std::string("the token response is ") + e.what());
    }
    if (!object.is_object()) {
        proto::scrub(object);
        throw TokenResponseError("the token response is not a JSON object");
    }
    return object;
}

std::optional<std::chrono::seconds> expires_in_of(const Json& object) {
    const auto found = object.find("expires_in");
    if (found == object.end() || found->is_null()) return std::nullopt;
    if (!found->is_number_integer() || found->get<long long>() <= 0 ||
        found->get<long long>() > kMaxExpiresIn)
        throw TokenResponseError(
            "the token response's \"expires_in\" is not a positive whole number of seconds");
    return std::chrono::seconds(found->get<long long>());
}

}  // namespace

LoginTokens parse_token_response(std::string_view body) {
    Json object = token_object(body);
    const proto::ScrubGuard guard(object);
    const auto access = object.find("access_token");
    if (access == object.end() || !access->is_string() ||
        access->get_ref<const std::string&>().empty())
        throw TokenResponseError("the token response has no string \"access_token\"");
    if (const auto type = object.find("token_type"); type != object.end()) {
        if (!type->is_string() ||
            ::strcasecmp(type->get_ref<const std::string&>().c_str(), "bearer") != 0)
            throw TokenResponseError("the token response's \"token_type\" is not \"bearer\"");
    }
    LoginTokens out;
    out.expires_in = expires_in_of(object);
    if (const auto refresh = object.find("refresh_token");
        refresh != object.end() && !refresh->is_null()) {
        if (!refresh->is_string() || refresh->get_ref<const std::string&>().empty())
            throw TokenResponseError("the token response's \"refresh_token\" is not a string");
        out.refresh_token = proto::Secret(refresh->get_ref<const std::string&>());
    }
    out.access_token = proto::Secret(access->get_ref<const std::string&>());
    return out;
}

std::string token_error(std::string_view body) {
    Json object;
    try {
        object = token_object(body);
    } catch (const TokenResponseError&) {
        return {};
    }
    const proto::ScrubGuard guard(object);
    const auto error = object.find("error");
    if (error == object.end() || !error->is_string()) return {};
    std::string text;
    proto::append_printable(text, error->get_ref<const std::string&>());
    if (const auto detail = object.find("error_description");
        detail != object.end() && detail->is_string()) {
        text += ": ";
        proto::append_printable(text, detail->get_ref<const std::string&>());
    }
    if (text.size() > kMaxOAuthErrorText) text.resize(kMaxOAuthErrorText);
    return text;
}

}  // namespace hostkeeper::daemon::discovery
