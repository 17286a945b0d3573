#include "daemon/http/url.hpp"

#include <curl/curl.h>

#include <cstring>
#include <memory>

#include "proto/secret.hpp"

namespace hostkeeper::daemon::http {
namespace {

struct UrlDeleter {
    void operator()(CURLU* url) const { curl_url_cleanup(url); }
};
using Url = std::unique_ptr<CURLU, UrlDeleter>;

struct CurlFree {
    void operator()(char* text) const { curl_free(text); }
};

Url make_url() {
    Url url(curl_url());
    if (!url) throw UrlError("out of memory");
    return url;
}

std::string describe(CURLUcode code) {
    return curl_url_strerror(code);
}

// A part of `url`, or "" when it has none.
std::string part(CURLU* url, CURLUPart which, unsigned flags = 0) {
    char* raw = nullptr;
    const CURLUcode rc = curl_url_get(url, which, &raw, flags);
    const std::unique_ptr<char, CurlFree> owned(raw);
    if (rc != CURLUE_OK || raw == nullptr) return {};
    return raw;
}

Url parsed(const std::string& text) {
    Url url = make_url();
    // Only what Terraform's Go client would take: no guessing of schemes.
    if (const CURLUcode rc =
            curl_url_set(url.get(), CURLUPART_URL, text.c_str(), CURLU_NON_SUPPORT_SCHEME);
        rc != CURLUE_OK) {
        throw UrlError("\"" + text + "\" is not a valid URL: " + describe(rc));
    }
    return url;
}

[[noreturn]] void throw_cannot_add(const std::string& url, const std::string& name, CURLUcode rc) {
    throw UrlError("\"" + url + "\": cannot add \"" + name + "\": " + describe(rc));
}

}  // namespace

std::string resolve_url(const std::string& base, const std::string& reference) {
    Url url = parsed(base);
    // With a base already set, curl_url_set resolves a relative reference
    // per RFC 3986 and takes an absolute one as it is.
    if (const CURLUcode rc =
            curl_url_set(url.get(), CURLUPART_URL, reference.c_str(), CURLU_NON_SUPPORT_SCHEME);
        rc != CURLUE_OK) {
        throw UrlError("\"" + reference + "\" is not a valid URL: " + describe(rc));
    }
    std::string result = part(url.get(), CURLUPART_URL);
    if (result.empty()) throw UrlError("\"" + reference + "\" does not resolve to a URL");
    return result;
}

UrlParts parse_url(const std::string& text) {
    const Url url = parsed(text);
    UrlParts parts;
    parts.scheme = part(url.get(), CURLUPART_SCHEME);
    parts.host = part(url.get(), CURLUPART_HOST);
    parts.port = part(url.get(), CURLUPART_PORT, CURLU_DEFAULT_PORT);
    parts.has_credentials =
        !part(url.get(), CURLUPART_USER).empty() || !part(url.get(), CURLUPART_PASSWORD).empty();
    for (std::string* s : {&parts.scheme, &parts.host}) {
        for (char& c : *s) c = static_cast<char>(c >= 'A' && c <= 'Z' ? c - 'A' + 'a' : c);
    }
    return parts;
}

bool same_origin(const std::string& a, const std::string& b) {
    const UrlParts x = parse_url(a);
    const UrlParts y = parse_url(b);
    return x.scheme == y.scheme && x.host == y.host && x.port == y.port;
}

std::string with_query(const std::string& url, const FormFields& fields) {
    Url parts = parsed(url);
    for (const auto& [name, value] : fields) {
        std::string pair = name;
        pair.append("=").append(value);
        if (const CURLUcode rc = curl_url_set(parts.get(), CURLUPART_QUERY, pair.c_str(),
                                              CURLU_APPENDQUERY | CURLU_URLENCODE);
            rc != CURLUE_OK) {
            throw_cannot_add(url, name, rc);
        }
    }
    std::string result = part(parts.get(), CURLUPART_URL);
    if (result.empty()) throw UrlError("\"" + url + "\" is not a valid URL");
    return result;
}

std::string form_body(const FormFields& fields) {
    std::string body;
    for (const auto& [name, value] : fields) {
        for (const std::string* text : {&name, &value}) {
            char* raw = curl_easy_escape(nullptr, text->data(), static_cast<int>(text->size()));
            if (raw == nullptr) throw UrlError("out of memory");
            body += text == &name ? (body.empty() ? "" : "&") : "=";
            body += raw;
            proto::scrub(raw, std::strlen(raw));
            curl_free(raw);
        }
    }
    return body;
}

}  // namespace hostkeeper::daemon::http
