#pragma once
// What a discovery document means, computed as Terraform's own client does:
// the response checks (media type, JSON object) and the services in it with
// their URLs made absolute. Pure: no I/O.

#include <cstddef>
#include <string>
#include <string_view>
#include <utility>

#include "daemon/http/http_text.hpp"  // is_json_media_type
#include "proto/messages.hpp"

namespace hostkeeper::daemon::discovery {

inline constexpr std::size_t kMaxDiscoveryDocument = std::size_t{1024} * 1024;
inline constexpr int kMaxDiscoveryRedirects = 3;

struct Services {
    proto::Json services = proto::Json::object();  // id -> absolute URL (login.v1: object)
    proto::Json invalid = proto::Json::object();   // id -> why it cannot be used
};

// A host's services as fetched (or forced): immutable, shared by the cache
// entry and every answer made from it.
struct DiscoveryDocument {
    DiscoveryDocument(std::string url_, Services services_)
        : url(std::move(url_)), services(std::move(services_)) {}
    std::string url;  // the final URL after redirects
    Services services;
    // Made by the reply module at the first reply, spliced into every later one (event loop only).
    mutable std::string reply_fields;
};

// "https://HOST/.well-known/terraform.json" for a normalized host.
std::string discovery_url(const std::string& host);

// The services of a document already parsed into an object, URLs resolved
// against `base_url` (the final URL after redirects).
Services resolve_services(const proto::Json& document, const std::string& base_url);

// The body of a 200 response: must be a JSON object. Throws
// std::runtime_error naming the problem.
Services parse_discovery_document(std::string_view body, const std::string& base_url);

}  // namespace hostkeeper::daemon::discovery
