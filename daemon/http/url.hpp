#pragma once
// URLs, through libcurl's URL API (never by hand): resolving a reference
// against a base, the parts discovery needs to judge a URL, and query
// strings and form bodies encoded.

#include <stdexcept>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

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

using FormFields = std::vector<std::pair<std::string, std::string>>;

// The absolute `url` with `fields` appended to its query, each name and
// value URL-encoded. Throws UrlError for anything that is not an absolute URL.
std::string with_query(const std::string& url, const FormFields& fields);

// `fields` as an application/x-www-form-urlencoded body ("a=1&b=2"). The
// encoder's own copies of the values (they may be secrets) are scrubbed.
std::string form_body(const FormFields& fields);

}  // namespace hostkeeper::daemon::http
