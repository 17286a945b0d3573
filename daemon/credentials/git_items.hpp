#pragma once
// The git view of the keyring (git-credential-hostkeeper): one item per
// (host, path, username) of https, keyed by its URL
// (proto/git_credential.hpp), holding the password, its expiry and an OAuth
// refresh token as one JSON object. Which item answers a request, and which
// a request erases, are the rules of PROTOCOL.md "git credentials". Never
// cached here: every call reads the keyring, whose rules are the port's (a
// locked item is keyring_locked, never absent); KeyringItems keeps which
// hosts have items. Blocks as the port does (worker thread).

#include <cstdint>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "daemon/credentials/keyring.hpp"
#include "proto/git_credential.hpp"
#include "proto/secret.hpp"

namespace hostkeeper::daemon::credentials {

struct GitCredential {
    proto::GitItemKey key;
    proto::Secret password;
    std::optional<std::uint64_t> password_expiry_utc;
    std::optional<proto::Secret> oauth_refresh_token;
};

struct GitItemInfo {
    std::string url;  // the item's key
    proto::GitItemKey key;
    std::string label;
    std::optional<WallTime> stored;
};

// The secret an item holds: compact JSON {"password":..,
// "password_expiry_utc":N?,"oauth_refresh_token":..?}.
proto::Secret git_secret_text(const GitCredential& credential);
// An item's secret read back; throws proto::Error{keyring_error} naming `url`
// for anything but such an object.
GitCredential git_credential_of(const proto::GitItemKey& key, const std::string& url,
                                const proto::Secret& text);

class GitItems {
  public:
    explicit GitItems(Keyring& keyring) : keyring_(keyring) {}

    std::optional<GitCredential> lookup(const proto::GitItemKey& key);
    // Creates or replaces the item of the credential's key.
    void store(const GitCredential& credential);
    bool remove(const proto::GitItemKey& key);
    // Listed without reading a secret, sorted by URL; an item whose key is
    // not one hostkeeper writes is left out.
    std::vector<GitItemInfo> items();

    // The item that answers `request` (its host, path and username when
    // one is named): the same host; an item with a path only for that path,
    // one without for any; the given username; the most specific first,
    // then the most recently stored. An item expired at `now` never answers.
    // `hosts`, when given, gets every host that has a git item.
    std::optional<GitCredential> find(const proto::GitItemKey& request, WallTime now,
                                      std::set<std::string>* hosts = nullptr);
    // Removes the items of `request`'s host and exactly its path (with a
    // password, also an item without a path, which find() answered for it),
    // of its username when it names one, holding `password` when one is
    // given.
    std::size_t erase(const proto::GitItemKey& request,
                      const std::optional<proto::Secret>& password);

  private:
    Keyring& keyring_;
};

}  // namespace hostkeeper::daemon::credentials
