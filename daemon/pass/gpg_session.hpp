#pragma once
// OpenPGP through GPGME, as the pass backend needs it. GPGME runs gpg, which
// asks gpg-agent for secret keys; the pinentry mode is CANCEL, so gpg-agent
// never shows a pinentry for the daemon and no passphrase ever passes
// through hostkeeper: a secret key whose passphrase gpg-agent has not cached
// is reported as keyring_locked ("run hostkeeper unlock"). Plaintext is
// written by gpg into a buffer of ours that is scrubbed when dropped, and
// read by gpg from the caller's proto::Secret without a copy.
//
// One session per thread (a GPGME context is not shared between threads).

#include <gpgme.h>

#include <filesystem>
#include <memory>
#include <string>
#include <vector>

#include "daemon/pass/gpg_options.hpp"
#include "proto/secret.hpp"

namespace hostkeeper::daemon::pass {

struct Decrypted {
    proto::Secret text;
    // The ids of the (sub)keys that decrypted it: what must stay unlocked
    // in gpg-agent for the text to be readable again (keygrips_of).
    std::vector<std::string> keyids;
};

class GpgSession {
  public:
    explicit GpgSession(const GpgOptions& options);
    GpgSession(const GpgSession&) = delete;
    GpgSession& operator=(const GpgSession&) = delete;
    ~GpgSession();

    // `entry` names the entry in messages ("hostkeeper/example.com").
    // Throws proto::Error: keyring_locked, keyring_unavailable, keyring_error.
    Decrypted decrypt(const std::string& ciphertext, const std::string& entry);
    // Encrypts to `recipients` (ids as .gpg-id holds them) and to no one
    // else (--no-encrypt-to), as pass does.
    std::string encrypt(const proto::Secret& plaintext, const std::vector<std::string>& recipients,
                        const std::string& entry);
    // Whether `signature` is a good detached signature of `file` made by one
    // of `fingerprints` (40 hex digits; primary or subkey), as pass checks
    // .gpg-id against $PASSWORD_STORE_SIGNING_KEY.
    bool signed_by(const std::string& file, const std::string& signature,
                   const std::vector<std::string>& fingerprints);

    gpgme_ctx_t context() const { return ctx_; }

  private:
    gpgme_ctx_t ctx_ = nullptr;
};

// The keygrips of the secret (sub)keys with these ids (a key listing: one
// gpg run, so the store's watch does it, not a request).
std::vector<std::string> keygrips_of(const GpgOptions& options,
                                     const std::vector<std::string>& keyids);

// Asks gpg-agent (KEYINFO) whether each keygrip's key can be used without
// a passphrase now: not protected, or its passphrase cached. Throws
// proto::Error{keyring_unavailable} when gpg-agent cannot be reached.
// Returns the keygrips that would need a passphrase.
std::vector<std::string> keys_needing_passphrase(const std::vector<std::string>& keygrips);

// GPGME's version, for the log ("1.18.0"); initializes GPGME once.
std::string gpgme_version();

}  // namespace hostkeeper::daemon::pass
