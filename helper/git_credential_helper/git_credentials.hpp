#pragma once
// git's credential protocol (git-credential(1), "INPUT/OUTPUT FORMAT"): the
// key=value lines a helper reads on standard input, `url=` taken apart as
// git's credential_from_url() does, and the lines `get` answers. No I/O here.

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "proto/secret.hpp"

namespace hostkeeper::helper::git_credential_helper {

// What git asks about or hands over. An empty protocol, host or path is a
// field git did not send; a username or password git sent may be empty (a
// single-sign-on credential is `username=` and `password=`), one it did not
// send is std::nullopt.
struct GitCredential {
    std::string protocol;
    std::string host;  // "HOST[:PORT]" as git sends it; hostkeeperd normalizes it
    std::string path;  // only with credential.useHttpPath, or from url=
    std::optional<std::string> username;
    std::optional<proto::Secret> password;
    std::optional<std::uint64_t> password_expiry_utc;  // Unix seconds
    std::optional<proto::Secret> oauth_refresh_token;
};

// The credential on a helper's standard input: "key=value" lines up to the
// end of the input or the first empty line (a "\r" before "\n" is part of
// the line end). protocol, host, path, username, password,
// password_expiry_utc and oauth_refresh_token are read (a later line
// replaces an earlier one); url= replaces them all with its parts; every
// other key (capability[], wwwauth[], authtype, credential, ephemeral,
// state[], continue, quit, ...) is ignored. A line without "=", a NUL byte,
// a password_expiry_utc that is not decimal seconds, or a url= git could not
// take apart throws Error{bad_request}, whose message never holds a value.
GitCredential parse_credential(std::string_view input);

// url=VALUE as git reads it: PROTOCOL://[USER[:PASSWORD]@]HOST[/PATH], each
// part percent-decoded, the path's leading and trailing "/" dropped; a "?" or
// "#" ends the host. Every field read before is cleared first.
void apply_url(GitCredential& credential, std::string_view url);

// `get`'s answer: username=, password= and, when known,
// password_expiry_utc= and oauth_refresh_token= lines. A value git's
// protocol cannot carry ("\n", "\r" or NUL) throws Error{internal}.
std::string format_answer(std::string_view username, std::string_view password,
                          std::optional<std::uint64_t> password_expiry_utc,
                          std::optional<std::string_view> oauth_refresh_token);

}  // namespace hostkeeper::helper::git_credential_helper
