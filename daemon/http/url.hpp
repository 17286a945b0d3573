#pragma once
// URLs, through libcurl's URL API (never by hand): resolving a reference
// against a base, and the parts discovery needs to judge a URL.

#include <stdexcept>
#include <string>

namespace hostkeeper::daemon::http {

class UrlError : public std::runtime_error {
  public:
    using std::runtime_error::runtime_error;
};

struct UrlParts {
    std::string scheme;            // lowercase
    std::string host;              // lowercase
    std::string port;              // always present: the scheme's default when the URL has none
    bool has_credentials = false;  // user or password present
};

// `reference` (absolute or relative) resolved against the absolute `base`,
// normalized. Throws UrlError naming the problem.
std::string resolve_url(const std::string& base, const std::string& reference);

// Throws UrlError for anything that is not an absolute URL.
UrlParts parse_url(const std::string& url);

// Same scheme, host and port: where a credential for `a` may also go.
bool same_origin(const std::string& a, const std::string& b);

}  // namespace hostkeeper::daemon::http
