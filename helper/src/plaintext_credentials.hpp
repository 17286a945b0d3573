#pragma once
// credentials.tfrc.json, the plaintext file `terraform login` writes:
// {"credentials": {"HOST": {"token": "..."}, ...}, ...other keys...}.
// Where Terraform and OpenTofu keep it, reading it (its tokens are scrubbed
// when dropped), and rewriting it without some hosts.

#include <filesystem>
#include <set>
#include <string>
#include <vector>

#include "hostkeeper/proto/messages.hpp"

namespace hostkeeper::client {

class CredentialsFile {
  public:
    // Throws FileError when the file cannot be read or is not a JSON object
    // whose "credentials" (when present) is an object; the file is untouched.
    explicit CredentialsFile(std::filesystem::path path);
    CredentialsFile(CredentialsFile&&) = default;
    CredentialsFile(const CredentialsFile&) = delete;
    CredentialsFile& operator=(const CredentialsFile&) = delete;
    ~CredentialsFile();

    const std::filesystem::path& path() const { return path_; }
    // The hosts as written in the file, in file order.
    std::vector<std::string> hosts() const;
    const proto::Json& credentials(const std::string& host) const;

    // Rewrites the file without `hosts` (atomically, mode 0600, every other
    // key kept). When nothing is left at all, the file is removed. Returns
    // true when it removed the file.
    bool rewrite_without(const std::set<std::string>& hosts) const;

  private:
    std::filesystem::path path_;
    proto::Json document_;
};

// Terraform's and OpenTofu's credentials.tfrc.json paths (without duplicates),
// whether they exist or not.
std::vector<std::filesystem::path> credentials_file_paths();

}  // namespace hostkeeper::client
