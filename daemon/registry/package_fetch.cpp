#include "daemon/registry/package_fetch.hpp"

#include <fcntl.h>
#include <spdlog/spdlog.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <cstring>
#include <optional>

#include "daemon/async/on_worker.hpp"
#include "daemon/http/http_fetch.hpp"
#include "daemon/registry/package_hash.hpp"
#include "daemon/registry/registry_options.hpp"
#include "proto/error.hpp"
#include "proto/socket_path.hpp"
#include "proto/unique_fd.hpp"

namespace hostkeeper::daemon::registry {
namespace asio = boost::asio;
namespace fs = std::filesystem;
using proto::Error;
using proto::ErrorCode;

namespace {

std::string lowercase(std::string text) {
    std::transform(text.begin(), text.end(), text.begin(), [](char c) {
        return static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    });
    return text;
}

using Fd = proto::UniqueFd;

// The package's hashes, checked against those published; `refusing` starts
// the message of a mismatch.
FetchedPackage verify(const std::string& path, const std::vector<std::string>& zh,
                      const std::vector<std::string>& h1, const std::string& refusing) {
    FetchedPackage out;
    const auto check = [&](const std::string& computed, const std::vector<std::string>& expected,
                           const char* kind) {
        if (expected.empty()) return;
        if (std::find(expected.begin(), expected.end(), computed) == expected.end()) {
            std::string list;
            for (const std::string& e : expected) list += (list.empty() ? "" : ", ") + e;
            throw Error(ErrorCode::verification_failed, refusing + ": its " + kind + " hash is " +
                                                            computed + ", but the publisher gave " +
                                                            list);
        }
        out.matched.push_back(computed);
    };
    try {
        // The cheap hash first: a package that fails it is not unpacked at all.
        out.zh = zip_hash(path);
        check(out.zh, zh, "zh: (SHA-256 of the zip)");
        out.h1 = h1_hash(path);
        check(out.h1, h1, "h1: (of its contents)");
    } catch (const PackageError& e) {
        throw Error(ErrorCode::verification_failed, refusing + ": " + e.what());
    }
    return out;
}

}  // namespace

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
    std::vector<std::string> zh;
    std::vector<std::string> h1;
    for (const std::string& hash : published) {
        if (hash.rfind("zh:", 0) == 0) zh.push_back(lowercase(hash));
        if (hash.rfind("h1:", 0) == 0) h1.push_back(hash);
    }
    if (zh.empty() && h1.empty()) {
        throw Error(ErrorCode::verification_failed,
                    what +
                        ": its publisher gave no zh: or h1: hash to check the package against; not "
                        "downloading it");
    }
    proto::ensure_private_directory(dir_, ::geteuid());  // 0700, ours, or an error that says so
    sweep();
    std::string path = (dir_ / "package-XXXXXX.zip").string();
    const Fd fd(::mkstemps(path.data(), 4));
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

    http::FetchRules rules;
    rules.max_body = kMaxPackageSize;
    rules.max_redirects = kMaxRegistryRedirects;
    rules.timeout = timeout_;
    rules.body_fd = fd.get();
    // No credentials: Terraform sends none to archive URLs either.
    // (Named first: async/toolchain.hpp.)
    const std::optional<proto::Secret> no_token;
    const std::string no_origin;
    const http::FetchResult result =
        co_await http::fetch_following(http_, url, no_token, no_origin, rules);
    if (!result.response)
        throw Error(ErrorCode::registry_failed, "downloading " + what + ": " + result.error);
    if (result.response->status != 200) {
        throw Error(ErrorCode::registry_failed, "downloading " + what + ": " +
                                                    result.response->url + ": HTTP status " +
                                                    std::to_string(result.response->status));
    }
    if (::fsync(fd.get()) != 0) {
        throw Error(ErrorCode::internal, "writing " + path + ": " + std::strerror(errno));
    }

    // Hashing unpacks the archive: off the event loop, which keeps serving.
    const std::string refusing = "refusing " + what + " from " + url;
    auto check = [&path, &zh, &h1, &refusing] { return verify(path, zh, h1, refusing); };
    FetchedPackage out = co_await async::on_worker(hashing_.get_executor(), std::move(check));
    out.size = result.response->body_size;
    partial.keep = true;
    out.path = path;
    spdlog::info("fetched {} ({} bytes), verified {}", what, out.size,
                 out.matched.size() == 2 ? "zh: and h1:" : out.matched.front());
    co_return out;
}

}  // namespace hostkeeper::daemon::registry
