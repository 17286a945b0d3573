#include "daemon/discovery/discovery_document.hpp"

#include <cctype>
#include <stdexcept>

#include "daemon/http/http_text.hpp"
#include "daemon/http/url.hpp"
#include "proto/json.hpp"
#include "proto/services.hpp"

namespace hostkeeper::daemon::discovery {
using proto::Json;

namespace {

// An absolute http(s) URL without user:password, or a UrlError saying why not.
std::string service_url(const std::string& base, const std::string& reference) {
    std::string url = http::resolve_url(base, reference);
    const http::UrlParts parts = http::parse_url(url);
    if (parts.scheme != "http" && parts.scheme != "https") {
        throw http::UrlError("\"" + reference + "\": only http and https URLs are allowed, not " +
                             parts.scheme);
    }
    if (parts.has_credentials)
        throw http::UrlError("\"" + reference + "\": URLs with user:password are not allowed");
    return url;
}

Json login_service(const Json& value, const std::string& base) {
    if (!value.is_object()) throw http::UrlError("login.v1 must be an object");
    Json login = value;
    for (const char* key : {"authz", "token"}) {
        const auto it = login.find(key);
        if (it == login.end()) continue;
        if (!it->is_string())
            throw http::UrlError(std::string("login.v1 \"") + key + "\" must be a string");
        *it = service_url(base, it->get<std::string>());
    }
    return login;
}

}  // namespace

std::string discovery_url(const std::string& host) {
    return "https://" + host + "/.well-known/terraform.json";
}

Services resolve_services(const Json& document, const std::string& base_url) {
    Services out;
    for (const auto& [id, value] : document.items()) {
        if (!proto::is_service_id(id)) continue;  // not a service id: Terraform never looks it up
        try {
            if (id == "login.v1") {
                out.services[id] = login_service(value, base_url);
            } else if (value.is_string()) {
                out.services[id] = service_url(base_url, value.get<std::string>());
            } else {
                throw http::UrlError("the value must be a URL string, not " +
                                     std::string(value.type_name()));
            }
        } catch (const http::UrlError& e) {
            out.invalid[id] = e.what();
        }
    }
    return out;
}

Services parse_discovery_document(std::string_view body, const std::string& base_url) {
    Json document;
    try {
        document = proto::parse_json(body);
    } catch (const proto::JsonError& e) {
        throw std::runtime_error(std::string("the body is ") + e.what());
    }
    if (!document.is_object()) {
        throw std::runtime_error(std::string("the body is a JSON ") + document.type_name() +
                                 ", not a JSON object");
    }
    return resolve_services(document, base_url);
}

}  // namespace hostkeeper::daemon::discovery
