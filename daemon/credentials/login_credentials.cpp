#include "daemon/credentials/login_credentials.hpp"

#include <algorithm>
#include <exception>

#include "daemon/credentials/token_expiry.hpp"

namespace hostkeeper::daemon::credentials {
using proto::Json;
using proto::Secret;

namespace {

const std::string* string_member(const Json& object, const char* name) {
    const auto found = object.find(name);
    if (found == object.end() || !found->is_string()) return nullptr;
    return &found->get_ref<const std::string&>();
}

}  // namespace

std::optional<LoginRecord> login_of(const Secret& credentials) {
    // Most credentials are no login: not parsed for nothing on every get.
    if (credentials.view().find("\"login\"") == std::string_view::npos) return std::nullopt;
    Json object = parsed_credentials(credentials);
    const proto::ScrubGuard guard(object);
    if (!object.is_object()) return std::nullopt;
    const auto login = object.find(kLogin);
    if (login == object.end() || !login->is_object()) return std::nullopt;
    const std::string* refresh = string_member(*login, "refresh_token");
    const std::string* url = string_member(*login, "token_url");
    if (refresh == nullptr || refresh->empty() || url == nullptr) return std::nullopt;
    LoginRecord record{Secret(*refresh), *url, {}, std::nullopt};
    if (const std::string* client = string_member(*login, "client_id")) record.client_id = *client;
    if (const std::string* issued = string_member(*login, "issued_at"))
        record.issued_at = parse_rfc3339(*issued);
    return record;
}

Secret login_credentials(const Secret& access_token, std::optional<WallTime> expires,
                         const LoginRecord* record) {
    Json object = {{"token", std::string(access_token.view())}};
    const proto::ScrubGuard guard(object);
    if (expires) object[kExpiresAt] = rfc3339_text(*expires);
    if (record != nullptr) {
        Json login = {{"refresh_token", std::string(record->refresh_token.view())},
                      {"token_url", record->token_url},
                      {"client_id", record->client_id}};
        if (record->issued_at) login["issued_at"] = rfc3339_text(*record->issued_at);
        object[kLogin] = std::move(login);
    }
    std::string text = object.dump();
    return Secret::adopt(text);
}

WallTime refresh_due(WallTime expires, std::optional<WallTime> issued) {
    WallTime::duration ahead = kMaxRefreshAhead;
    if (issued && *issued < expires) ahead = std::min(ahead, (expires - *issued) / 10);
    return expires - ahead;
}

Secret served(Secret credentials) {
    if (credentials.view().find("\"login\"") == std::string_view::npos) return credentials;
    Json object;
    try {
        object = proto::parse_json(credentials.view());
    } catch (const std::exception&) {
        return credentials;
    }
    const proto::ScrubGuard guard(object);
    if (!object.is_object()) return credentials;
    const auto login = object.find(kLogin);
    if (login == object.end()) return credentials;
    proto::scrub(*login);
    object.erase(login);
    std::string text = object.dump();
    return Secret::adopt(text);
}

}  // namespace hostkeeper::daemon::credentials
