#pragma once
// The one request `hostkeeper login` waits for on its loopback port: the
// browser's GET /login?code=..&state=.. that the authorization server
// redirects to (RFC 6749 section 4.1.2), or its error redirect (section
// 4.1.2.1). Pure: no I/O, fuzzed.

#include <cstddef>
#include <stdexcept>
#include <string>
#include <string_view>

namespace hostkeeper::helper::cli {

// The most of a request head read.
inline constexpr std::size_t kMaxRedirectHead = std::size_t{16} * 1024;

class RedirectError : public std::runtime_error {
  public:
    using std::runtime_error::runtime_error;
};

// What the request is: the redirect with its code, or another request
// (a browser's /favicon.ico) that is answered 404 and does not end the wait.
struct RedirectRequest {
    bool is_login = false;  // GET /login
    std::string code;       // when is_login
};

// `head`: the request head (its first line is all that is read). Throws
// RedirectError for a request that is no HTTP GET, a redirect carrying an
// "error" (the message quotes the server's error and error_description,
// made printable), a state other than `state`, or no code.
RedirectRequest read_redirect(std::string_view head, std::string_view state);

// `text` with %XX and '+' decoded as an application/x-www-form-urlencoded
// value; throws RedirectError for a bad %-escape.
std::string form_decode(std::string_view text);

}  // namespace hostkeeper::helper::cli
