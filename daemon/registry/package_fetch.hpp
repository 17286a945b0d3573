#pragma once
// `provider fetch`: a provider package downloaded into the daemon's private
// downloads directory for a client to collect, checked against the hashes its
// registry or mirror published (archives/verified_download, the download and
// verification the archive cache shares). A mismatch deletes the file.

#include <boost/asio/awaitable.hpp>
#include <boost/asio/thread_pool.hpp>
#include <chrono>
#include <cstddef>
#include <filesystem>
#include <string>
#include <utility>
#include <vector>

#include "daemon/http/http_client.hpp"

namespace hostkeeper::daemon::registry {

struct FetchedPackage {
    std::string path;  // the verified archive, in the downloads directory
    std::size_t size = 0;
    std::string zh;                    // "zh:..." computed
    std::string h1;                    // "h1:..." computed
    std::vector<std::string> matched;  // which of them the publisher's hashes confirmed
};

class PackageFetcher {
  public:
    // `dir` is created 0700 when missing; files left there by a client that
    // never collected them are removed after an hour.
    PackageFetcher(http::HttpClient& http, std::filesystem::path dir, std::chrono::seconds timeout);

    // Downloads `url` and checks it against `published` ("zh:"/"h1:" hashes;
    // others are ignored). Throws proto::Error: registry_failed for the
    // download, verification_failed for a mismatch or nothing to check
    // against (`what` names the package in messages).
    boost::asio::awaitable<FetchedPackage> fetch(std::string url,
                                                 std::vector<std::string> published,
                                                 std::string what);

  private:
    void sweep() const;

    http::HttpClient& http_;
    std::filesystem::path dir_;
    std::chrono::seconds timeout_;
    boost::asio::thread_pool hashing_{1};
};

}  // namespace hostkeeper::daemon::registry
