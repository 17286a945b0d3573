#pragma once
// credentials.tfrc.json, the plaintext file `terraform login` writes:
// {"credentials": {"HOST": {"token": "..."}, ...}, ...other keys...}.
// Where Terraform and OpenTofu keep it, reading it (its tokens are scrubbed
// when dropped), rewriting it without some hosts, and adding tokens to it
// (setup --undo --restore-tokens).

#include <cstddef>
#include <filesystem>
#include <map>
#include <string>
#include <string_view>
#include <vector>

#include "proto/messages.hpp"
#include "proto/secret.hpp"

namespace hostkeeper::helper::terraform_config {

class CredentialsFile {
  public:
    // Throws FileError when the file cannot be read or is not a JSON object
    // whose "credentials" (when present) is an object; the file is untouched.
    explicit CredentialsFile(std::filesystem::path path);
    // The same from `text`, already read from `path` (which only names the file
    // in errors). The caller scrubs `text`. Tests and fuzzing use it.
    CredentialsFile(std::filesystem::path path, std::string_view text);
    CredentialsFile(CredentialsFile&&) = default;
    CredentialsFile(const CredentialsFile&) = delete;
    CredentialsFile& operator=(const CredentialsFile&) = delete;
    ~CredentialsFile();

    const std::filesystem::path& path() const { return path_; }
    // The hosts as written in the file, in file order.
    std::vector<std::string> hosts() const;
    const proto::Json& credentials(const std::string& host) const;
    // Whether the file holds "credentials" and no other key.
    bool holds_only_credentials() const {
        return document_.size() == 1 && document_.contains("credentials");
    }

    struct Rewritten {
        bool removed_file = false;         // nothing was left: the file is gone
        std::size_t removed_hosts = 0;     // hosts taken out of the file
        std::size_t left_hosts = 0;        // hosts still in it
        std::vector<std::string> changed;  // in `imported`, but now with another value (kept)
    };
    // Rewrites the file without each host of `imported` (host as spelled in
    // the file -> the value that was stored and verified) whose value in THIS
    // read of the file is still exactly that value; everything else (other
    // hosts, changed values, other keys) stays as this read found it. Read the
    // file again just before calling this, so that what was written to it
    // meanwhile is kept. Atomic, mode 0600. When nothing is left at all, a
    // regular file is removed; a symlink is never removed (that would leave the
    // plaintext in its target): its target is rewritten. With nothing to
    // remove, the file is not touched.
    Rewritten rewrite_without(const std::map<std::string, proto::Json>& imported) const;

  private:
    std::filesystem::path path_;
    proto::Json document_;
};

// Terraform's and OpenTofu's credentials.tfrc.json paths (without duplicates),
// whether they exist or not.
std::vector<std::filesystem::path> credentials_file_paths();

// Writing tokens into credentials.tfrc.json as `terraform login` does: the
// only place hostkeeper writes a token to disk, for `hostkeeper setup --undo
// --restore-tokens` (the user's explicit request to leave the keyring).
//
// Terraform (internal/command/cliconfig/credentials.go) keeps the file in its
// configuration directory (~/.terraform.d), as
// {"credentials": {"HOST": {"token": "..."}}, ...other keys...}, with the
// host in its display form, written to a temporary file (mode 0600) renamed
// over the old one; other keys and other hosts' entries are kept.
struct HostToken {
    std::string host;  // normalized (ASCII) hostname
    proto::Secret token;
};

struct RestoreResult {
    std::vector<std::string> written;  // hosts added to the file
    std::vector<std::string> kept;     // hosts the file already had: their entry is left alone
};

// Adds each host's {"token": ...} to `path` unless the file already has an
// entry for that host (under any spelling that names the same host), which
// is kept. Creates the file (and its directory) when missing. Throws
// proto::FileError, with the file unchanged, when it cannot be read or is not
// a credentials file.
RestoreResult add_tokens_to_credentials_file(const std::filesystem::path& path,
                                             const std::vector<HostToken>& tokens);

}  // namespace hostkeeper::helper::terraform_config
