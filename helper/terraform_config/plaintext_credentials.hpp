#pragma once
// credentials.tfrc.json, the plaintext file `terraform login` writes:
// {"credentials": {"HOST": {"token": "..."}, ...}, ...other keys...}.
// Where Terraform and OpenTofu keep it, reading it (its tokens are scrubbed
// when dropped), and rewriting it without some hosts.

#include <cstddef>
#include <filesystem>
#include <map>
#include <string>
#include <string_view>
#include <vector>

#include "proto/messages.hpp"

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

}  // namespace hostkeeper::helper::terraform_config
