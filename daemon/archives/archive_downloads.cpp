// ArchiveStore's downloads: a temp file in this user's own temp directory,
// written by one download that every reader follows while it grows
// (GrowingArchive), verified, then renamed into place.
#include <fcntl.h>
#include <spdlog/spdlog.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/detached.hpp>
#include <cerrno>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <string_view>
#include <utility>

#include "daemon/archives/archive_store.hpp"
#include "daemon/archives/shared_store.hpp"
#include "daemon/archives/store_names.hpp"
#include "daemon/archives/verified_download.hpp"
#include "daemon/async/on_worker.hpp"
#include "proto/error.hpp"

namespace hostkeeper::daemon::archives {
namespace asio = boost::asio;
namespace fs = std::filesystem;
using proto::Error;
using proto::ErrorCode;

namespace {

// The last path segment of `url` when it is a plain file name.
std::string filename_of(const std::string& url) {
    std::string path = url.substr(0, url.find_first_of("?#"));
    const auto slash = path.rfind('/');
    std::string name = slash == std::string::npos ? path : path.substr(slash + 1);
    const bool plain = !name.empty() && name != "." && name != ".." &&
                       std::all_of(name.begin(), name.end(), [](char c) {
                           return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
                                  (c >= '0' && c <= '9') || c == '.' || c == '_' || c == '+' ||
                                  c == '-';
                       });
    return plain ? name : std::string();
}

// Tells `growing` of each piece the download writes.
http::BodyObserver follow(std::shared_ptr<GrowingArchive> growing) {
    return [growing = std::move(growing)](std::string_view piece,
                                          std::optional<std::uint64_t> announced) {
        growing->grew(piece.size(), announced);
    };
}

// The tier's archive in `fd`: a failed write to it is the store's problem.
asio::awaitable<std::optional<std::uint64_t>> tier_fetch(ArchiveTier& tier, const TierItem& item,
                                                         const std::string& sha256, int fd,
                                                         const std::string& what) {
    try {
        auto fetching = tier.fetch(item, sha256, fd);  // named first
        co_return co_await std::move(fetching);
    } catch (const http::HttpError& e) {
        throw StoreUnwritable("taking " + what + " from the fleet tier: " + e.what(),
                              e.write_errno());
    }
}

// Why the package at `path` does not verify; "" when it does (a job for the
// hashing thread).
auto verdict_job(std::string path, ExpectedHashes expected, const std::string& what,
                 std::string zh) {
    return [path = std::move(path), expected = std::move(expected),
            refusing = "refusing " + what + " from the fleet tier",
            zh = std::move(zh)]() -> std::string {
        try {
            verify_package(path, expected, refusing, zh);
        } catch (const std::exception& e) {
            return e.what();
        }
        return {};
    };
}

// fsync(fd) for the hashing thread: 0, or its errno.
auto sync_job(int fd) {
    return [fd]() -> int { return ::fsync(fd) == 0 ? 0 : errno; };
}

}  // namespace

// A download's temp file made and its download started, on its own
// coroutine: it runs to its end whoever still follows it. Throws
// bad_request (hashes), StoreUnwritable (no temp file).
std::shared_ptr<ArchiveStore::Flight> ArchiveStore::start(ArchiveRequest request) {
    std::optional<ExpectedHashes> expected;
    if (is_provider_name(request.key)) {
        // Its key is its SHA-256: the publisher's zh: hashes must name it,
        // and the file must match it.
        const std::string key_zh = "zh:" + request.key.substr(request.key.find('/') + 1);
        expected = ExpectedHashes::from(request.published, request.what);
        if (!expected->zh.empty() &&
            std::find(expected->zh.begin(), expected->zh.end(), key_zh) == expected->zh.end()) {
            throw Error(ErrorCode::bad_request,
                        request.what + ": cached as " + key_zh +
                            ", which is not among the zh: hashes its publisher gave");
        }
        expected->zh = {key_zh};
    } else if (request.verify) {
        expected = ExpectedHashes::from(request.published, request.what);
    }
    auto flight = std::make_shared<Flight>();
    flight->hint = filename_of(request.url);
    flight->growing = std::make_shared<GrowingArchive>(io_);
    try {
        prepare_to_store();
        // Written in this user's own temp directory, reached through its
        // descriptor: nobody else can swap the file while it is verified.
        flight->dirs = dirs_;
        flight->temp = "/proc/self/fd/" + std::to_string(flight->dirs->tmp.get()) + "/" +
                       std::to_string(::getpid()) + "-XXXXXX";
        flight->file = OwnedFd(::mkostemp(flight->temp.data(), O_CLOEXEC));
        if (flight->file.get() < 0) {
            const int error = errno;
            throw StoreUnwritable("cannot create a file in " + flight->dirs->tmp_path.string() +
                                      ": " + std::strerror(error),
                                  error);
        }
        flight->temp_file = fs::path(flight->temp).filename().string();
    } catch (const StoreUnwritable& e) {
        store_failed(e);
        throw;
    }
    flights_.emplace(request.key, flight);
    asio::co_spawn(io_, download(flight, std::move(request), std::move(expected)), asio::detached);
    return flight;
}

// One download, counted; its readers told how it ended.
asio::awaitable<void> ArchiveStore::download(std::shared_ptr<Flight> flight, ArchiveRequest request,
                                             std::optional<ExpectedHashes> expected) {
    const std::string key = request.key;
    std::uint64_t size = 0;
    std::exception_ptr error;
    try {
        // Named first.
        auto inserting = insert(*flight, std::move(request), std::move(expected));
        size = co_await std::move(inserting);
    } catch (...) {
        error = std::current_exception();
    }
    finished(key, *flight, size, error);
}

// Not a coroutine: its try block would trip GCC bug 109224.
void ArchiveStore::finished(const std::string& key, const Flight& flight, std::uint64_t size,
                            const std::exception_ptr& error) {
    flights_.erase(key);
    if (!error) {
        if (flight.kept) {
            ++downloads_;
            logged_causes_.clear();
            if (!store_error_.empty()) {
                spdlog::info("archive cache {}: archives are stored again", options_.dir.string());
                store_error_.clear();
            }
        }
        // Kept or not, it is whole and verified: its readers get all of it.
        flight.growing->finish(size);
        return;
    }
    try {
        std::rethrow_exception(error);
    } catch (const StoreUnwritable& e) {
        store_failed(e);
    } catch (const std::exception& e) {
        ++failures_;
        // Whoever followed it has its response cut short: say why here.
        if (flight.growing->written() > 0)
            spdlog::warn("archive cache: {} (responses that were following it are cut short)",
                         e.what());
    }
    flight.growing->fail(error);
}

// The download into the flight's temp file, verified, then renamed into
// place when it can be (flight.kept); its size. The temp file's name is
// removed on every way out but a stored archive: its readers keep it open.
asio::awaitable<std::uint64_t> ArchiveStore::insert(Flight& flight, ArchiveRequest request,
                                                    std::optional<ExpectedHashes> expected) {
    // Removed on every way out but success.
    struct RemoveUnlessKept {
        int dir;
        const std::string& file;
        bool keep = false;
        ~RemoveUnlessKept() {
            if (!keep) ::unlinkat(dir, file.c_str(), 0);
        }
    } partial{flight.dirs->tmp.get(), flight.temp_file};
    const std::string key = request.key;
    const std::string what = request.what;
    auto obtaining = obtain(flight, std::move(request), std::move(expected));  // named first
    const DownloadedFile file = co_await std::move(obtaining);
    if (file.size == 0)
        throw Error(ErrorCode::registry_failed, "downloading " + what + ": it is empty");
    // Verified: its readers may have all of it now, from the page cache,
    // while it is made durable (off the event loop) and stored.
    flight.growing->finish(file.size);
    auto syncing =
        async::on_worker(hashing_.get_executor(), sync_job(flight.file.get()));  // named first
    const int sync_error = co_await std::move(syncing);
    const std::string name = stored_name(key);
    const std::optional<OwnedFd> in =
        sync_error == 0 ? keep_download(flight, name, what) : not_synced(flight, what, sync_error);
    if (flight.offer) offer(*flight.offer, in ? *in : flight.file, file.size, key);
    if (!in) co_return file.size;  // served from the temp file all the same
    partial.keep = true;
    flight.kept = true;
    remember_stored(name, in->get(), file.size);
    evict(name);
    co_return file.size;
}

// The archive in the flight's file, verified: from the tier when it has it,
// else from upstream (and then, with a tier, to be offered to it).
asio::awaitable<DownloadedFile> ArchiveStore::obtain(Flight& flight, ArchiveRequest request,
                                                     std::optional<ExpectedHashes> expected) {
    auto pulling = from_tier(flight, request, expected);  // named first
    std::optional<DownloadedFile> pulled = co_await std::move(pulling);
    if (pulled) co_return std::move(*pulled);
    if (tier_ != nullptr) flight.offer = std::move(request.tier_item);
    auto downloading = upstream(flight, std::move(request), std::move(expected));  // named first
    co_return co_await std::move(downloading);
}

// The archive from its upstream URL into the flight's file, followed by its
// readers as it comes, and verified.
asio::awaitable<DownloadedFile> ArchiveStore::upstream(Flight& flight, ArchiveRequest request,
                                                       std::optional<ExpectedHashes> expected) {
    http::BodyObserver observer = follow(flight.growing);
    // Named first.
    auto downloading = download_verified(http_, hashing_.get_executor(), flight.file.get(),
                                         flight.temp, std::move(request.url),
                                         std::move(request.credentials), std::move(expected),
                                         request.what, options_.fetch_timeout, std::move(observer));
    co_return co_await std::move(downloading);
}

// The archive from the tier into the flight's file, verified as an upstream
// download would be, and told to its readers whole; nullopt when the tier
// has none or it did not verify (the tier is told): upstream then.
asio::awaitable<std::optional<DownloadedFile>> ArchiveStore::from_tier(
    Flight& flight, const ArchiveRequest& request, const std::optional<ExpectedHashes>& expected) {
    if (tier_ == nullptr || !request.tier_item) co_return std::nullopt;
    const TierItem& item = *request.tier_item;
    const std::string& what = request.what;
    const std::string sha256 =
        is_provider_name(request.key) ? request.key.substr(request.key.find('/') + 1) : "";
    auto fetching = tier_fetch(*tier_, item, sha256, flight.file.get(), what);  // named first
    const std::optional<std::uint64_t> size = co_await std::move(fetching);
    if (!size || *size == 0) co_return std::nullopt;
    if (expected) {
        // A provider blob's bytes were hashed as they came and matched its
        // digest, the registry's sha256: that is the file's zh:.
        const std::string zh = sha256.empty() ? "" : "zh:" + sha256;
        // Named first.
        auto hashed = async::on_worker(hashing_.get_executor(),
                                       verdict_job(flight.temp, *expected, what, zh));
        if (const std::string why = co_await std::move(hashed); !why.empty()) {
            tier_->refused(item, why);
            co_return std::nullopt;
        }
    }
    DownloadedFile out;
    out.size = *size;
    flight.growing->grew(*size, *size);
    spdlog::info("took {} ({} bytes) from the fleet tier{}", what, out.size,
                 expected ? ", verified" : "");
    co_return out;
}

// A verified upstream download offered to the tier, on a descriptor of its own.
void ArchiveStore::offer(const TierItem& item, const OwnedFd& file, std::uint64_t size,
                         const std::string& key) const {
    try {
        tier_->offer(item, file.reopen(), size,
                     is_provider_name(key) ? key.substr(key.find('/') + 1) : "");
    } catch (const std::exception& e) {
        spdlog::warn("archive cache: not offering {} to the fleet tier: {}", key, e.what());
    }
}

// The verified download stored as `name` (store_download), or nullopt when
// it cannot be: said (not_kept), and served from its open file only. Not a
// coroutine (GCC bug 109224).
std::optional<OwnedFd> ArchiveStore::keep_download(const Flight& flight, const std::string& name,
                                                   const std::string& what) {
    try {
        return store_download(*flight.dirs, flight.file, flight.temp_file, name, what);
    } catch (const StoreUnwritable& e) {
        not_kept(e);
    } catch (const Error& e) {
        not_kept(StoreUnwritable(e.what(), 0));
    }
    return std::nullopt;
}

// A verified download whose bytes could not be made durable: served from its
// temp file, not stored.
std::optional<OwnedFd> ArchiveStore::not_synced(const Flight& flight, const std::string& what,
                                                int error) {
    not_kept(StoreUnwritable("writing " + what + " to " + flight.temp + ": " + std::strerror(error),
                             error));
    return std::nullopt;
}

// The verified download `out` (`temp_file` in this user's temp directory)
// stored as `name`, opened. Not a coroutine (GCC bug 109224).
OwnedFd ArchiveStore::store_download(const StoreDirs& dirs, const OwnedFd& out,
                                     const std::string& temp_file, const std::string& name,
                                     const std::string& what) const {
    // Opened before it is renamed: from here on, an eviction cannot take it.
    // The file written, not whatever has its name now.
    OwnedFd in = out.reopen();
    struct stat written {};
    struct stat reading {};
    if (::fstat(out.get(), &written) != 0 || ::fstat(in.get(), &reading) != 0 ||
        reading.st_uid != ::geteuid() || reading.st_dev != written.st_dev ||
        reading.st_ino != written.st_ino)
        throw Error(ErrorCode::internal, "the download of " + what + " changed hands");
    seal(in.get(), (dirs.tmp_path / temp_file).string(), is_provider_name(name));
    const fs::path path = options_.dir / name;
    const auto [at, file] = locate(dirs, name);
    if (const int error = rename_into_place(dirs.tmp.get(), temp_file, at, file, path)) {
        throw StoreUnwritable(
            "cannot store " + what + " as " + path.string() + ": " + std::strerror(error), error);
    }
    return in;
}

}  // namespace hostkeeper::daemon::archives
