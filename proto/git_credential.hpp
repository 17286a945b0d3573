#pragma once
// git credentials (git-credential-hostkeeper, PROTOCOL.md "git
// credentials"): the rules both ends apply to git's fields, and the key that
// names a git item in the keyring. Only https is kept. A key is
// "https://" + the percent-encoded username + "@" + the normalized host
// [+ "/" + path], the URL git itself would write for the credential; it is
// the item's identity, parsed back for listing.

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace hostkeeper::proto {

inline constexpr std::string_view kGitProtocol = "https";
inline constexpr std::string_view kDefaultGitUsername = "oauth2";
inline constexpr std::size_t kMaxGitPathSize = 1024;
inline constexpr std::size_t kMaxGitUsernameSize = 1024;
inline constexpr std::size_t kMaxGitPasswordSize = std::size_t{60} * 1024;

// One git item's identity (its protocol is https).
struct GitItemKey {
    std::string host;      // normalized: "gitlab.example.com", "git.example:8443"
    std::string path;      // "" for none; never starts with '/'
    std::string username;  // "": in a request's pattern any, in a stored item none
    bool operator==(const GitItemKey&) const = default;
};

// Each throws Error{bad_request} (the host: Error{bad_host}) with a message
// for the user.
// "https" passes; anything else: "git credentials are only kept for https".
void check_git_protocol(std::string_view protocol);
// git's "HOST[:PORT]", normalized (proto::normalize_hostname).
std::string git_host(std::string_view host);
// Leading '/' dropped; at most kMaxGitPathSize bytes, no control character.
std::string git_path(std::string_view path);
// At most kMaxGitUsernameSize bytes, no control character; "" allowed.
std::string git_username(std::string_view username);
// At most kMaxGitPasswordSize bytes, no NUL, carriage return or line end;
// "" allowed (git's single-sign-on credentials have an empty password).
void check_git_password(std::string_view password);
// git's password_expiry_utc: decimal Unix seconds; nullopt for anything else.
std::optional<std::uint64_t> parse_git_expiry(std::string_view text);

// "https://alice@gitlab.example.com/group/net.git"; without a username
// "https://gitlab.example.com/...". The username is percent-encoded: every
// byte but ALPHA, DIGIT, '-', '.', '_' and '~' as %XX (upper case).
std::string git_item_key(const GitItemKey& key);
// The key's URL without its username, for labels and messages.
std::string git_item_url(const GitItemKey& key);
// A key back; nullopt unless it is exactly what git_item_key() writes for
// valid fields (a normalized host, a valid path and username).
std::optional<GitItemKey> parse_git_item_key(std::string_view key);

std::string percent_encode_username(std::string_view username);

}  // namespace hostkeeper::proto
