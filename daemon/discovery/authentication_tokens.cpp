#include "daemon/discovery/authentication_tokens.hpp"

#include <exception>
#include <stdexcept>

#include "daemon/credentials/token_expiry.hpp"
#include "proto/json.hpp"

namespace hostkeeper::daemon::discovery {
namespace {

constexpr std::size_t kMaxErrorText = 200;

// The member `key` of `node` when both are there and it is a string.
const std::string* string_at(const proto::Json& node, const char* key) {
    if (!node.is_object()) return nullptr;
    const auto it = node.find(key);
    if (it == node.end() || !it->is_string()) return nullptr;
    return &it->get_ref<const std::string&>();
}

const proto::Json* object_at(const proto::Json& node, const char* key) {
    if (!node.is_object()) return nullptr;
    const auto it = node.find(key);
    if (it == node.end() || !it->is_object()) return nullptr;
    return &*it;
}

// Reads the parsed document; `document` is scrubbed by the caller.
CreatedToken read_token_document(const proto::Json& document) {
    const proto::Json* data = object_at(document, "data");
    if (data == nullptr) throw std::runtime_error("the answer has no \"data\" object");
    const std::string* id = string_at(*data, "id");
    if (id == nullptr || id->empty())
        throw std::runtime_error("the answer has no token id (data.id)");
    const proto::Json* attributes = object_at(*data, "attributes");
    const std::string* token = attributes ? string_at(*attributes, "token") : nullptr;
    if (token == nullptr || token->empty())
        throw std::runtime_error("the answer has no token (data.attributes.token)");
    CreatedToken out;
    out.id = *id;
    out.token = proto::Secret(*token);
    if (const std::string* expired = string_at(*attributes, "expired-at"))
        out.expired_at = *expired;
    return out;
}

}  // namespace

std::string token_request_body(const std::string& description,
                               std::chrono::system_clock::time_point expires) {
    const proto::Json body = {
        {"data",
         {{"type", "authentication-tokens"},
          {"attributes",
           {{"description", description}, {"expired-at", credentials::rfc3339_text(expires)}}}}}};
    return body.dump();
}

CreatedToken read_created_token(std::string_view body) {
    proto::Json document;
    try {
        document = proto::parse_json(body);
    } catch (const std::exception&) {
        throw std::runtime_error("the answer is not JSON");
    }
    const proto::ScrubGuard guard(document);
    return read_token_document(document);
}

std::string json_api_error(std::string_view body) {
    std::string text;
    try {
        const proto::Json document = proto::parse_json(body);
        if (!document.is_object()) return {};
        const auto errors = document.find("errors");
        if (errors == document.end() || !errors->is_array() || errors->empty()) return {};
        const proto::Json& first = errors->front();
        const std::string* said = string_at(first, "detail");
        if (said == nullptr || said->empty()) said = string_at(first, "title");
        if (said == nullptr) return {};
        text = *said;
    } catch (const std::exception&) {
        return {};
    }
    std::string out;
    for (const char c : text) {
        const auto u = static_cast<unsigned char>(c);
        out += (u < 0x20 || u == 0x7f) ? ' ' : c;
    }
    if (out.size() <= kMaxErrorText) return out;
    // Cut at a character's start: the text stays UTF-8 (as parsed).
    std::size_t end = kMaxErrorText;
    while (end > 0 && (static_cast<unsigned char>(out[end]) & 0xC0) == 0x80) --end;
    out.resize(end);
    return out;
}

std::string stored_token_id(const proto::Secret& credentials) {
    try {
        proto::Json object = proto::parse_json(credentials.view());
        const proto::ScrubGuard guard(object);
        const std::string* id = string_at(object, "token_id");
        return id != nullptr ? *id : std::string();
    } catch (const std::exception&) {
        return {};
    }
}

proto::Secret rotated_credentials(const proto::Secret& old, const CreatedToken& created,
                                  const std::string& expires_at) {
    proto::Json object;
    try {
        object = proto::parse_json(old.view());
    } catch (const std::exception&) {
        object = proto::Json::object();
    }
    const proto::ScrubGuard guard(object);
    if (!object.is_object()) object = proto::Json::object();
    object["token"] = std::string(created.token.view());
    object[credentials::kExpiresAt] = expires_at;
    object["token_id"] = created.id;
    std::string text = object.dump();
    return proto::Secret::adopt(text);
}

std::optional<std::chrono::system_clock::time_point> stored_expiry(
    const proto::Secret& credentials) {
    try {
        return credentials::expiry_of(credentials, proto::ErrorCode::keyring_error, "");
    } catch (const proto::Error&) {
        return std::nullopt;  // not a time
    }
}

}  // namespace hostkeeper::daemon::discovery
