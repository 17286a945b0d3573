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

// A request that is not this login's redirect (another state, no code, no
// HTTP GET): answered 400 and ignored, the wait goes on. Its message quotes
// nothing of the request, so it may be shown on the page answered.
class RedirectError : public std::runtime_error {
  public:
    using std::runtime_error::runtime_error;
};

// The authorization server's error redirect with this login's state: the
// server's answer, which ends the login.
class LoginRefused : public std::runtime_error {
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
// RedirectError for a request that is no HTTP GET, or a redirect with a
// state other than `state` or without a code; LoginRefused for a redirect
// with `state` carrying an "error" (the message quotes the server's error
// and error_description, made printable).
RedirectRequest read_redirect(std::string_view head, std::string_view state);

// `text` with %XX and '+' decoded as an application/x-www-form-urlencoded
// value; throws RedirectError for a bad %-escape.
std::string form_decode(std::string_view text);

}  // namespace hostkeeper::helper::cli
