#pragma once
// The keyring port over a `pass` password store, through GPGME: each item
// is one entry in its kind's folder (the table in pass_keyring.cpp; names
// in store_layout.hpp). A host's entry holds the credentials JSON object
// and a newline, so `pass show hostkeeper/HOST` shows it, and an entry made
// by `pass insert` (a JSON object, also over several lines, or a bare token
// on the first line) is read. Docker credentials are entries under
// hostkeeper/docker/ holding {"ServerURL":...,"Username":...,"Secret":...};
// git items are entries under hostkeeper/git/ holding {"url":...,
// "password":...} (and the item's expiry and refresh token).
// Writes encrypt to the entry's .gpg-id recipients, replace the file
// atomically (mode from PASSWORD_STORE_UMASK, default 077) and commit when
// the store is a git repository. An entry is a regular file: a symbolic
// link, at the entry or at hostkeeper/ or one of its folders, is never
// followed (refused, and skipped in listings).
//
// Called from the keyring worker thread only; `used_keyids()`,
// `forget_used_keys()` and `store_dir()` from any thread.

#include <filesystem>
#include <mutex>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "daemon/credentials/keyring.hpp"
#include "daemon/pass/gpg_options.hpp"

namespace hostkeeper::daemon::pass {

class GpgSession;

class PassKeyring final : public credentials::Keyring {
  public:
    explicit PassKeyring(const std::optional<std::filesystem::path>& configured_store);
    ~PassKeyring() override;

    std::optional<credentials::StoredItem> lookup(const credentials::ItemKey& key) override;
    void store(const credentials::StoredItem& item) override;
    bool remove(const credentials::ItemKey& key) override;
    std::vector<credentials::ListedItem> list(credentials::ItemKind kind) override;
    void unlock() override;
    std::string_view name() const override { return "pass"; }

    const std::filesystem::path& store_dir() const { return store_; }
    // The ids of the keys that decrypted what was read: what must stay
    // unlocked in gpg-agent for cached answers to stand.
    std::vector<std::string> used_keyids() const;
    void forget_used_keys();
    const GpgOptions& gpg_options() const { return options_; }
    // $PASSWORD_STORE_GPG_OPTS words GPGME cannot pass on.
    const std::vector<std::string>& ignored_gpg_options() const { return options_.ignored; }

  private:
    GpgSession& session();
    // One entry's decrypted text (nullopt: no such entry), its encryption
    // and its removal, for every kind of item alike; no symbolic link is
    // followed (store_layout.hpp).
    std::optional<proto::Secret> read_entry(const std::string& entry);
    void write_entry(const std::string& entry, std::string_view text);
    bool remove_entry(const std::string& entry);
    // The regular files of one of the store's folders ("hostkeeper"), with
    // the time each was written; links among them are skipped and logged.
    std::vector<std::pair<std::string, credentials::WallTime>> folder_files(
        const std::string& folder);
    std::vector<std::string> recipients_for(const std::filesystem::path& folder,
                                            const std::string& entry);

    std::filesystem::path store_;
    GpgOptions options_;
    std::unique_ptr<GpgSession> session_;
    mutable std::mutex used_mutex_;
    std::set<std::string> used_keyids_;
};

// Whether the store's folder for hostkeeper's entries can be written by
// this process (it may exist yet, or its nearest existing parent).
bool store_writable(const std::filesystem::path& store);

}  // namespace hostkeeper::daemon::pass
