#pragma once
// The one download-and-verify path of the daemon's package downloads
// (`provider fetch` and the archive cache): an archive URL fetched into a
// file the caller made, with the registry host's token when the caller gives
// one (sent to the host's own origin only, never along a redirect
// elsewhere), then checked against the hashes its publisher gave, off the
// event loop. The caller owns the file: it removes it when this throws.

#include <boost/asio/any_io_executor.hpp>
#include <boost/asio/awaitable.hpp>
#include <chrono>
#include <cstddef>
#include <optional>
#include <string>
#include <vector>

#include "daemon/http/http_client.hpp"
#include "proto/error.hpp"
#include "proto/secret.hpp"

namespace hostkeeper::daemon::archives {

inline constexpr std::size_t kMaxPackageSize = std::size_t{2} * 1024 * 1024 * 1024;  // 2 GiB
inline constexpr int kMaxDownloadRedirects = 10;  // Go's net/http default, kept by Terraform

// The file could not be written (a full or read-only file system, a quota,
// permissions): the archive store passes the archive through uncached. Code internal, for callers
// that do not tell it apart.
class StoreUnwritable : public proto::Error {
  public:
    StoreUnwritable(const std::string& message, int error)
        : proto::Error(proto::ErrorCode::internal, message), error_(error) {}
    int error() const noexcept { return error_; }  // the errno, 0 when not known

  private:
    int error_;
};

// The credentials a download carries: the stored token of `host`, sent to
// `origin` (scheme, host and port) only. Copies clone the token; each copy
// scrubs its own.
struct DownloadCredentials {
    std::string host;                    // whose token ("": the download carries none)
    std::string origin;                  // where it may go: "https://HOST/"
    std::optional<proto::Secret> token;  // nullopt: none stored, or the keyring could not say
    std::string keyring_problem;         // why the keyring could not say ("": it could)

    DownloadCredentials() = default;
    DownloadCredentials(const DownloadCredentials& other);
    DownloadCredentials& operator=(const DownloadCredentials& other);
    DownloadCredentials(DownloadCredentials&&) noexcept = default;
    DownloadCredentials& operator=(DownloadCredentials&&) noexcept = default;
    ~DownloadCredentials() = default;
};

// What a publisher's hashes say a package must be.
struct ExpectedHashes {
    std::vector<std::string> zh;  // "zh:<hex>", lowercased
    std::vector<std::string> h1;  // "h1:<base64>"

    // The "zh:" and "h1:" hashes of `published` (others are ignored). Throws
    // proto::Error verification_failed when there are none (`what` names the
    // package): a package with nothing to check against is not downloaded.
    static ExpectedHashes from(const std::vector<std::string>& published, const std::string& what);
};

struct DownloadedFile {
    std::size_t size = 0;
    std::string zh;                    // "zh:..." computed; "" when not verified
    std::string h1;                    // "h1:..." computed; "" when not verified
    std::vector<std::string> matched;  // which of them the publisher's hashes confirmed
};

// Checks the zip at `path` against `expected` (zh: first: a package that
// fails it is not unpacked); `zh` is its zh: hash when already computed
// (else the file is read for it). Blocking. Throws proto::Error
// verification_failed naming the expected and the computed hash; `refusing`
// starts its message.
DownloadedFile verify_package(const std::string& path, const ExpectedHashes& expected,
                              const std::string& refusing, const std::string& zh = {});

// GETs `url` (with `credentials`' token on its origin only, redirects
// followed, at most kMaxPackageSize) into `fd` (an empty file at `path`,
// opened for writing), then, unless `expected` is nullopt, verifies it on
// `hashing` (see verify_package); the caller syncs it before storing it. With `on_body`, each piece
// of the body is told to it once the file has it (http::BodyObserver) and
// hashed here as it comes (SHA-256, once, whoever follows the file): its
// zh: hash is not read back from the file. Throws proto::Error:
// registry_failed for the download (no response, or a status other than
// 200; a 401 or 403 says whether the token went and why not),
// verification_failed, StoreUnwritable for a write that failed.
boost::asio::awaitable<DownloadedFile> download_verified(
    http::HttpClient& http, boost::asio::any_io_executor hashing, int fd, std::string path,
    std::string url, DownloadCredentials credentials, std::optional<ExpectedHashes> expected,
    std::string what, std::chrono::seconds timeout, http::BodyObserver on_body = {});

}  // namespace hostkeeper::daemon::archives
