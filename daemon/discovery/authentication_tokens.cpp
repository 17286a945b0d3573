#include "daemon/discovery/authentication_tokens.hpp"

#include <algorithm>
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

// One data[] entry of a token list.
ListedToken listed_token(const proto::Json& entry) {
    const std::string* id = string_at(entry, "id");
    if (id == nullptr || id->empty())
        throw std::runtime_error("a listed token has no id (data[].id)");
    ListedToken out{*id, std::nullopt};
    const proto::Json* attributes = object_at(entry, "attributes");
    if (attributes == nullptr) return out;
    const auto expired = attributes->find("expired-at");
    if (expired == attributes->end() || expired->is_null()) return out;
    if (expired->is_string()) out.expires = credentials::parse_rfc3339(expired->get<std::string>());
    if (!out.expires)
        throw std::runtime_error("token " + *id +
                                 " has an expired-at that is neither null nor RFC 3339");
    return out;
}

}  // namespace

TokenList read_token_list(std::string_view body) {
    proto::Json document;
    try {
        document = proto::parse_json(body);
    } catch (const std::exception&) {
        throw std::runtime_error("the token list is not JSON");
    }
    const auto data = document.is_object() ? document.find("data") : document.end();
    if (!document.is_object() || data == document.end() || !data->is_array())
        throw std::runtime_error("the token list has no \"data\" array");
    TokenList out;
    for (const proto::Json& entry : *data) out.tokens.push_back(listed_token(entry));
    out.total = out.tokens.size();
    const proto::Json* meta = object_at(document, "meta");
    const proto::Json* pages = meta != nullptr ? object_at(*meta, "pagination") : nullptr;
    if (pages != nullptr) {
        const auto total = pages->find("total-count");
        if (total != pages->end() && total->is_number_unsigned())
            out.total = std::max<std::size_t>(out.total, total->get<std::size_t>());
    }
    return out;
}

ListedExpiry expiry_in_list(const TokenList& list, const std::string& known_id) {
    ListedExpiry out;
    if (!known_id.empty()) {
        for (const ListedToken& token : list.tokens) {
            if (token.id != known_id) continue;
            out.found = true;
            out.expires = token.expires;
            return out;
        }
    }
    if (list.total == 1 && list.tokens.size() == 1) {
        out.found = true;
        out.expires = list.tokens.front().expires;
        return out;
    }
    out.why = std::to_string(list.total) + (list.total == 1 ? " token" : " tokens") +
              " for this user" + (known_id.empty() ? std::string() : ", none of them " + known_id);
    return out;
}

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
    object[credentials::kRotatedAt] = credentials::rfc3339_text(std::chrono::system_clock::now());
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
