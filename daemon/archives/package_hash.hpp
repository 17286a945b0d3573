#pragma once
// The two hashes Terraform records for a provider package: "zh:" (SHA-256 of
// the zip file, hex) and "h1:" (golang.org/x/mod/sumdb/dirhash Hash1 of the
// files in the zip: the SHA-256 of the sorted lines "HEX  NAME\n", base64).
// The only file that includes libzip; OpenSSL computes SHA-256.

#include <cstddef>
#include <cstdint>
#include <memory>
#include <stdexcept>
#include <string>
#include <string_view>

namespace hostkeeper::daemon::archives {

class PackageError : public std::runtime_error {
  public:
    using std::runtime_error::runtime_error;
};

// The SHA-256 of `text`, 64 lowercase hex digits (a module archive's key).
std::string sha256_hex(std::string_view text);

// SHA-256 fed piece by piece: a download hashed as it arrives.
class StreamingSha256 {
  public:
    StreamingSha256();  // throws PackageError
    StreamingSha256(const StreamingSha256&) = delete;
    StreamingSha256& operator=(const StreamingSha256&) = delete;
    ~StreamingSha256();
    void update(std::string_view piece);  // throws PackageError
    std::uint64_t bytes() const noexcept { return bytes_; }
    // "zh:<64 lowercase hex digits>" of what was fed; once. Throws PackageError.
    std::string finish_zh();

  private:
    struct State;
    std::unique_ptr<State> state_;
    std::uint64_t bytes_ = 0;
};

// "zh:<64 lowercase hex digits>" of the file at `path`. Throws PackageError.
std::string zip_hash(const std::string& path);

// "zh:<64 lowercase hex digits>" of the file open as `from`, read from its
// start, each block written to the file open as `to` as it is hashed; more
// than `limit` bytes are refused. Throws PackageError.
std::string zip_hash_copy(int from, int to, std::uint64_t limit);

// Limits on what h1_hash unpacks: a zip bomb is refused, not hashed.
inline constexpr std::size_t kMaxPackageEntries = 100'000;
inline constexpr std::uint64_t kMaxPackageUnpacked =
    std::uint64_t{4} * 1024 * 1024 * 1024;  // 4 GiB

// "h1:<base64>" of the zip archive at `path`, as Terraform computes it for a
// lock file. Throws PackageError when it is no zip archive, names a file with
// a newline (dirhash refuses those too), or unpacks to more than the limits.
std::string h1_hash(const std::string& path);

}  // namespace hostkeeper::daemon::archives
