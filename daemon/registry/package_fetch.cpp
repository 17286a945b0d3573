#include "daemon/registry/package_fetch.hpp"

#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <optional>

#include "daemon/archives/verified_download.hpp"
#include "proto/error.hpp"
#include "proto/socket_path.hpp"
#include "proto/unique_fd.hpp"

namespace hostkeeper::daemon::registry {
namespace asio = boost::asio;
namespace fs = std::filesystem;
using proto::Error;
using proto::ErrorCode;

PackageFetcher::PackageFetcher(http::HttpClient& http, fs::path dir, std::chrono::seconds timeout)
    : http_(http), dir_(std::move(dir)), timeout_(timeout) {}

// Packages nobody collected (a client that died): only our own files.
void PackageFetcher::sweep() const {
    std::error_code ec;
    const auto now = fs::file_time_type::clock::now();
    for (const auto& entry : fs::directory_iterator(dir_, ec)) {
        const std::string name = entry.path().filename().string();
        if (name.rfind("package-", 0) != 0 || entry.path().extension() != ".zip") continue;
        if (!entry.is_regular_file(ec) || entry.is_symlink(ec)) continue;
        const auto modified = entry.last_write_time(ec);
        if (!ec && now - modified > std::chrono::hours(1)) fs::remove(entry.path(), ec);
    }
}

asio::awaitable<FetchedPackage> PackageFetcher::fetch(std::string url,
                                                      std::vector<std::string> published,
                                                      std::string what) {
    std::optional<archives::ExpectedHashes> expected =
        archives::ExpectedHashes::from(published, what);
    proto::ensure_private_directory(dir_, ::geteuid());  // 0700, ours, or an error that says so
    sweep();
    std::string path = (dir_ / "package-XXXXXX.zip").string();
    const proto::UniqueFd fd(::mkstemps(path.data(), 4));
    if (fd.get() < 0)
        throw Error(ErrorCode::internal,
                    "cannot create a file in " + dir_.string() + ": " + std::strerror(errno));
    // Removed on every way out but success.
    struct RemoveUnlessKept {
        const std::string& path;
        bool keep = false;
        ~RemoveUnlessKept() {
            if (!keep) ::unlink(path.c_str());
        }
    } partial{path};

    // Without credentials, as Terraform downloads a package; named first.
    auto download = archives::download_verified(http_, hashing_.get_executor(), fd.get(), path,
                                                std::move(url), archives::DownloadCredentials(),
                                                std::move(expected), std::move(what), timeout_);
    archives::DownloadedFile file = co_await std::move(download);
    partial.keep = true;
    FetchedPackage out;
    out.path = path;
    out.size = file.size;
    out.zh = std::move(file.zh);
    out.h1 = std::move(file.h1);
    out.matched = std::move(file.matched);
    co_return out;
}

}  // namespace hostkeeper::daemon::registry
