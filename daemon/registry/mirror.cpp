#include "daemon/registry/mirror.hpp"

#include "daemon/http/url.hpp"
#include "proto/error.hpp"
#include "proto/hostname.hpp"

namespace hostkeeper::daemon::registry {
using proto::Error;
using proto::ErrorCode;

namespace {

Mirror normalize_once(const std::string& url) {
    const std::string what = "the mirror URL \"" + url + "\" ";
    http::UrlParts parts;
    std::string normalized;
    try {
        normalized = http::resolve_url(url, url);
        parts = http::parse_url(normalized);
    } catch (const http::UrlError& e) {
        throw Error(ErrorCode::bad_request, what + "is not an absolute URL: " + e.what());
    }
    if (parts.scheme != "https") throw Error(ErrorCode::bad_request, what + "must use https");
    if (parts.has_credentials)
        throw Error(ErrorCode::bad_request, what + "must not hold a user name or password");
    if (normalized.find_first_of("?#") != std::string::npos) {
        throw Error(ErrorCode::bad_request, what + "must not have a query or fragment");
    }
    Mirror mirror;
    mirror.host =
        proto::normalize_hostname(parts.port == "443" ? parts.host : parts.host + ":" + parts.port);
    // One spelling per mirror: the normalized host (lowercase, punycode, no
    // :443), then the path, ending in "/".
    const auto authority = normalized.find("://") + 3;
    const auto slash = normalized.find('/', authority);
    std::string path = slash == std::string::npos ? "/" : normalized.substr(slash);
    if (path.back() != '/') path += '/';
    mirror.base = "https://" + mirror.host + path;
    return mirror;
}

}  // namespace

Mirror make_mirror(const std::string& url) {
    // Twice: IDNA can turn a host into one libcurl then reads as an IPv4
    // address in short form ("\uff11\uff12\uff17.\uff11" -> "127.1", which
    // curl connects to as 127.0.0.1): the mirror is named as curl reaches it.
    // Found by tests/fuzz/fuzz_mirror.
    return normalize_once(normalize_once(url).base);
}

}  // namespace hostkeeper::daemon::registry
