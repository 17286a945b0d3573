#include "daemon/archives/archive_store.hpp"

#include <fcntl.h>
#include <spdlog/spdlog.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/detached.hpp>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <string_view>
#include <utility>

#include "daemon/archives/package_hash.hpp"
#include "daemon/archives/shared_store.hpp"
#include "daemon/archives/verified_download.hpp"
#include "proto/error.hpp"
#include "proto/file_io.hpp"
#include "proto/paths.hpp"
#include "proto/socket_path.hpp"

namespace hostkeeper::daemon::archives {
namespace asio = boost::asio;
namespace fs = std::filesystem;
using proto::Error;
using proto::ErrorCode;

namespace {

constexpr std::array<std::string_view, 2> kKinds{"providers", "modules"};
constexpr std::size_t kHexDigits = 64;
constexpr auto kStaleTemp = std::chrono::hours(1);

bool is_hex_name(std::string_view name) {
    return name.size() == kHexDigits && std::all_of(name.begin(), name.end(), [](char c) {
               return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f');
           });
}

bool is_provider_key(const std::string& key) {
    return key.rfind("providers/", 0) == 0;
}

bool is_uid_name(std::string_view name) {
    return !name.empty() && name.size() <= 10 &&
           std::all_of(name.begin(), name.end(), [](char c) { return c >= '0' && c <= '9'; });
}

// The 64 hex digits that end a stored file's name.
std::string_view hex_of(std::string_view name) {
    return name.substr(name.size() - kHexDigits);
}

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

// Makes `dir` and its missing parents 0700 (as the XDG base directory
// specification asks), then checks `dir` is ours and private.
void make_private_dirs(const fs::path& dir) {
    fs::path at;
    for (const fs::path& part : dir) {
        at /= part;
        if (::mkdir(at.c_str(), 0700) != 0 && errno != EEXIST) {
            throw fs::filesystem_error("cannot create the directory", at,
                                       std::error_code(errno, std::generic_category()));
        }
    }
    proto::check_private_directory(dir, ::geteuid());
}

// The free bytes of the file system holding `dir` (or its nearest existing
// parent); nullopt when it cannot be asked.
std::optional<std::uint64_t> free_bytes(const fs::path& dir) {
    fs::path at = dir;
    struct statvfs vfs {};
    while (::statvfs(at.c_str(), &vfs) != 0) {
        if (errno != ENOENT || !at.has_parent_path() || at == at.parent_path()) return std::nullopt;
        at = at.parent_path();
    }
    return static_cast<std::uint64_t>(vfs.f_bavail) * vfs.f_frsize;
}

// What stats().store_problem says of a store that failed with `e`.
std::string store_problem(const fs::path& dir, const StoreUnwritable& e) {
    const std::string passed = "; archives are passed through uncached";
    if (e.error() == ENOSPC || e.error() == EDQUOT) {
        const std::optional<std::uint64_t> left = free_bytes(dir);
        return std::string("the cache directory is full: ") +
               (left ? std::to_string(*left) : std::string("?")) + " bytes free on " +
               dir.string() + passed;
    }
    return "the cache directory " + dir.string() + " cannot store archives: " + e.what() + passed;
}

// Tells `growing` of each piece the download writes.
http::BodyObserver follow(std::shared_ptr<GrowingArchive> growing) {
    return [growing = std::move(growing)](std::string_view piece,
                                          std::optional<std::uint64_t> announced) {
        growing->grew(piece.size(), announced);
    };
}

}  // namespace

fs::path default_archive_dir() {
    return proto::archives_dir();
}

OwnedFd& OwnedFd::operator=(OwnedFd&& other) noexcept {
    if (this != &other) {
        if (fd_ >= 0) ::close(fd_);
        fd_ = other.release();
    }
    return *this;
}

OwnedFd::~OwnedFd() {
    if (fd_ >= 0) ::close(fd_);
}

int OwnedFd::release() noexcept {
    const int fd = fd_;
    fd_ = -1;
    return fd;
}

OwnedFd OwnedFd::reopen() const {
    const std::string proc = "/proc/self/fd/" + std::to_string(fd_);
    int fd = ::open(proc.c_str(), O_RDONLY | O_CLOEXEC);
    if (fd < 0) fd = ::fcntl(fd_, F_DUPFD_CLOEXEC, 0);
    if (fd < 0)
        throw Error(ErrorCode::internal,
                    std::string("cannot open a cached archive again: ") + std::strerror(errno));
    return OwnedFd(fd);
}

Archive Archive::duplicate() const {
    return Archive{fd.reopen(), size, filename_hint, growing, lease};
}

void check_archive_key(const std::string& key) {
    for (const std::string_view kind : kKinds) {
        if (key.size() == kind.size() + 1 + kHexDigits && key.compare(0, kind.size(), kind) == 0 &&
            key[kind.size()] == '/' && is_hex_name(std::string_view(key).substr(kind.size() + 1)))
            return;
    }
    throw Error(ErrorCode::bad_request,
                "an archive key is \"providers/\" or \"modules/\" and 64 lowercase hex digits");
}

std::string module_archive_key(const std::string& url) {
    return "modules/" + sha256_hex(url);
}

ArchiveStore::ArchiveStore(asio::any_io_executor io, http::HttpClient& http,
                           ArchiveStoreOptions options)
    : io_(std::move(io)), http_(http), options_(std::move(options)) {
    if (options_.dir.empty()) options_.dir = default_archive_dir();
    try {
        prepare();
        sweep_temp_files();
        scan();
        spdlog::info("archive cache {}: {} archives, {} bytes (at most {})", options_.dir.string(),
                     stored_.size(), stats().bytes, options_.max_bytes);
    } catch (const std::exception& e) {
        spdlog::warn("archive cache {}: {}", options_.dir.string(), e.what());
        store_error_ = store_problem(options_.dir, StoreUnwritable(e.what(), 0));
        store_failed_at_ = std::chrono::steady_clock::now();
    }
}

// The directories: 0700 and ours, or a group's (shared_store.hpp), and the
// lock file. Throws proto::Error internal.
void ArchiveStore::prepare() {
    const fs::path& dir = options_.dir;
    try {
        std::error_code ec;
        if (!fs::is_directory(dir, ec)) make_private_dirs(dir);
        const StoreMode mode = check_store_dir(dir, ::geteuid());
        if (mode == StoreMode::private_dir) {
            for (const std::string_view kind : kKinds)
                proto::ensure_private_directory(dir / kind, ::geteuid());
            proto::ensure_private_directory(dir / "tmp", ::geteuid());
        } else {
            struct stat st {};
            if (::stat(dir.c_str(), &st) != 0)
                throw fs::filesystem_error("cannot examine the directory", dir,
                                           std::error_code(errno, std::generic_category()));
            for (const std::string_view kind : kKinds) ensure_shared_subdir(dir / kind, st.st_gid);
            ensure_shared_subdir(dir / "tmp", st.st_gid);
            ensure_own_subdir(dir / "modules" / std::to_string(::geteuid()), ::geteuid());
        }
        if (!locks_.enabled() || mode_ != mode)
            locks_.open(dir / ".lock", mode == StoreMode::shared_dir);
        mode_ = mode;
    } catch (const fs::filesystem_error& e) {
        mode_.reset();
        throw Error(ErrorCode::internal,
                    "the archive cache directory " + dir.string() + ": " + e.what());
    } catch (const std::exception& e) {
        mode_.reset();  // the message names the directory and what is accepted
        throw Error(ErrorCode::internal, e.what());
    }
}

// Before an insert: the directories, else StoreUnwritable. Not a coroutine:
// a try block in insert() would trip GCC's false warning (async/toolchain.hpp).
void ArchiveStore::prepare_to_store() {
    try {
        prepare();
    } catch (const Error& e) {
        throw StoreUnwritable(e.what(), 0);
    }
    sweep_temp_files();
}

// Downloads a daemon (this one or another) left behind when it died.
void ArchiveStore::sweep_temp_files() const {
    std::error_code ec;
    const auto now = fs::file_time_type::clock::now();
    for (const auto& entry : fs::directory_iterator(options_.dir / "tmp", ec)) {
        const auto modified = entry.last_write_time(ec);
        if (!ec && now - modified > kStaleTemp) {
            spdlog::info("archive cache: removing {}, a download abandoned", entry.path().string());
            fs::remove(entry.path(), ec);
        }
    }
}

// What the directory holds now, whoever stored it: DIR/KIND/<hex>, and in
// a shared directory every user's DIR/modules/<uid>/<hex>.
void ArchiveStore::scan() {
    stored_.clear();
    for (const std::string_view kind : kKinds) {
        std::error_code ec;
        for (const auto& entry : fs::directory_iterator(options_.dir / kind, ec)) {
            const std::string name = entry.path().filename().string();
            if (is_hex_name(name)) {
                scan_file(std::string(kind) + "/" + name);
            } else if (kind == "modules" && is_uid_name(name) && !entry.is_symlink(ec)) {
                std::error_code unreadable;  // another user's, closed to us: not counted
                for (const auto& own : fs::directory_iterator(entry.path(), unreadable)) {
                    const std::string hex = own.path().filename().string();
                    if (is_hex_name(hex)) scan_file((fs::path(kind) / name / hex).string());
                }
            }
        }
    }
}

// One stored file, used when it was last written or (another user's hit)
// last read, whichever is later.
void ArchiveStore::scan_file(const std::string& name) {
    const fs::path path = options_.dir / name;
    struct stat st {};
    if (::lstat(path.c_str(), &st) != 0 || !S_ISREG(st.st_mode) || st.st_size <= 0) return;
    std::error_code ec;
    const auto written = fs::last_write_time(path, ec);
    if (ec) return;
    const std::int64_t read_later_ns =
        (std::int64_t{st.st_atim.tv_sec} - st.st_mtim.tv_sec) * 1'000'000'000 +
        (st.st_atim.tv_nsec - st.st_mtim.tv_nsec);
    const auto used =
        written + std::chrono::duration_cast<fs::file_time_type::duration>(
                      std::chrono::nanoseconds(std::max<std::int64_t>(0, read_later_ns)));
    stored_[name] = Entry{static_cast<std::uint64_t>(st.st_size), used};
}

std::string ArchiveStore::stored_name(const std::string& key) const {
    if (mode_ != StoreMode::shared_dir || is_provider_key(key)) return key;
    return "modules/" + std::to_string(::geteuid()) + "/" + std::string(hex_of(key));
}

asio::awaitable<std::optional<Archive>> ArchiveStore::find(const std::string& key) {
    check_archive_key(key);
    std::optional<Opened> opened = open_stored(key);
    if (!opened) co_return std::nullopt;
    if (opened->verify) {
        // Named first (async/toolchain.hpp).
        auto hashing = hash_of(opened->archive.fd.get());
        const std::string hash = co_await std::move(hashing);
        if (!accept_hashed(*opened, hash)) co_return std::nullopt;
    }
    co_return served(std::move(*opened));
}

asio::awaitable<Archive> ArchiveStore::get(ArchiveRequest request) {
    check_archive_key(request.key);
    if (request.url.rfind("https://", 0) != 0 && request.url.rfind("http://", 0) != 0) {
        throw Error(ErrorCode::bad_request,
                    request.what + ": an archive URL must be absolute, https or http");
    }
    if (is_provider_key(request.key) && !request.verify) {
        throw Error(ErrorCode::bad_request,
                    request.what + ": a provider package is always verified before it is stored");
    }
    auto finding = find(request.key);  // named first (async/toolchain.hpp)
    if (std::optional<Archive> hit = co_await std::move(finding)) co_return std::move(*hit);
    const std::string name = stored_name(request.key);
    std::shared_ptr<Flight> flight;
    if (const auto it = flights_.find(request.key); it != flights_.end()) {
        flight = it->second;
    } else {
        if (stopped_) throw Error(ErrorCode::internal, "hostkeeperd is stopping");
        if (store_resting()) {
            ++passed_through_;
            throw StoreUnwritable(store_error_, 0);
        }
        flight = start(std::move(request));
    }
    while (!flight->growing->started()) {
        auto waiting = flight->growing->changed();  // named first (async/toolchain.hpp)
        co_await std::move(waiting);
    }
    if (flight->growing->error()) std::rethrow_exception(flight->growing->error());
    // Leased from the start: once stored, no eviction takes it while it is sent.
    co_return Archive{flight->file.reopen(), flight->growing->written(), flight->hint,
                      flight->growing, lease_of(name)};
}

// A download's temp file made and its download started, on its own
// coroutine: it runs to its end whoever still follows it. Throws
// bad_request (hashes), StoreUnwritable (no temp file).
std::shared_ptr<ArchiveStore::Flight> ArchiveStore::start(ArchiveRequest request) {
    std::optional<ExpectedHashes> expected;
    if (is_provider_key(request.key)) {
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
        flight->temp = (options_.dir / "tmp" / (std::to_string(::getpid()) + "-XXXXXX")).string();
        flight->file = OwnedFd(::mkostemp(flight->temp.data(), O_CLOEXEC));
        if (flight->file.get() < 0) {
            const int error = errno;
            throw StoreUnwritable("cannot create a file in " + (options_.dir / "tmp").string() +
                                      ": " + std::strerror(error),
                                  error);
        }
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
        // Named first (async/toolchain.hpp).
        auto inserting = insert(*flight, std::move(request), std::move(expected));
        size = co_await std::move(inserting);
    } catch (...) {
        error = std::current_exception();
    }
    finished(key, *flight, size, error);
}

// Not a coroutine: its try block would trip GCC's false warning (async/toolchain.hpp).
void ArchiveStore::finished(const std::string& key, const Flight& flight, std::uint64_t size,
                            const std::exception_ptr& error) {
    flights_.erase(key);
    if (!error) {
        ++downloads_;
        if (!store_error_.empty()) {
            spdlog::info("archive cache {}: archives are stored again", options_.dir.string());
            store_error_.clear();
        }
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
// place; its size. The temp file is removed on every way out but success.
asio::awaitable<std::uint64_t> ArchiveStore::insert(Flight& flight, ArchiveRequest request,
                                                    std::optional<ExpectedHashes> expected) {
    struct RemoveUnlessKept {
        const std::string& path;
        bool keep = false;
        ~RemoveUnlessKept() {
            if (!keep) ::unlink(path.c_str());
        }
    } partial{flight.temp};
    const std::string key = request.key;
    const std::string what = request.what;
    http::BodyObserver observer = follow(flight.growing);
    // Named first (async/toolchain.hpp).
    auto downloading =
        download_verified(http_, hashing_.get_executor(), flight.file.get(), flight.temp,
                          std::move(request.url), std::move(request.credentials),
                          std::move(expected), what, options_.fetch_timeout, std::move(observer));
    const DownloadedFile file = co_await std::move(downloading);
    if (file.size == 0)
        throw Error(ErrorCode::registry_failed, "downloading " + what + ": it is empty");
    // The descriptor written is the one sealed and remembered: the temp
    // file's name is never opened again.
    seal(flight.file.get(), flight.temp);
    const std::string name = stored_name(key);
    const fs::path path = options_.dir / name;
    if (::rename(flight.temp.c_str(), path.c_str()) != 0) {
        const int error = errno;
        throw StoreUnwritable(
            "cannot store " + what + " as " + path.string() + ": " + std::strerror(error), error);
    }
    partial.keep = true;
    remember_stored(name, flight.file.get(), file.size);
    evict(name);
    co_return file.size;
}

// Logged once, when the directory stops taking archives.
void ArchiveStore::store_failed(const StoreUnwritable& e) {
    ++passed_through_;
    const bool already = !store_error_.empty();
    store_error_ = store_problem(options_.dir, e);
    store_failed_at_ = std::chrono::steady_clock::now();
    if (!already) spdlog::warn("archive cache: {} ({})", store_error_, e.what());
}

bool ArchiveStore::store_resting() const {
    return !store_error_.empty() &&
           std::chrono::steady_clock::now() - store_failed_at_ < kStoreRetry;
}

// Least recently used first, until what is stored (by any daemon) fits;
// `keep` (a stored_name()) stays, and so do files a daemon is serving and
// files this user may not remove.
void ArchiveStore::evict(const std::string& keep) {
    scan();
    std::uint64_t total = 0;
    std::vector<std::pair<fs::file_time_type, std::string>> by_age;
    for (const auto& [key, entry] : stored_) {
        total += entry.size;
        if (key != keep) by_age.emplace_back(entry.used, key);
    }
    std::sort(by_age.begin(), by_age.end());
    for (const auto& [used, key] : by_age) {
        if (total <= options_.max_bytes) break;
        const auto size = stored_[key].size;
        const fs::path path = options_.dir / key;
        std::shared_ptr<void> held;
        if (!locks_.take(hex_of(key), held)) {
            spdlog::debug("archive cache: {} is being served: not evicted", key);
            continue;
        }
        if (::unlink(path.c_str()) != 0 && errno != ENOENT) {
            // Another user's module archive (theirs to evict), or a file system's refusal.
            const bool theirs = errno == EACCES || errno == EPERM;
            if (theirs) {
                spdlog::debug("archive cache: {} is not ours to remove", key);
            } else {
                spdlog::warn("archive cache: cannot remove {}: {}", path.string(),
                             std::strerror(errno));
            }
            continue;
        }
        verified_.forget(key);
        spdlog::info("archive cache: evicted {} ({} bytes, least recently used)", key, size);
        total -= size;
        stored_.erase(key);
        ++evictions_;
    }
}

ArchiveStats ArchiveStore::stats() const {
    ArchiveStats s;
    s.count = stored_.size();
    for (const auto& [key, entry] : stored_) s.bytes += entry.size;
    s.max_bytes = options_.max_bytes;
    s.downloads = downloads_;
    s.hits = hits_;
    s.evictions = evictions_;
    s.failures = failures_;
    s.passed_through = passed_through_;
    s.rejected = rejected_;
    s.store_problem = store_error_;
    return s;
}

void ArchiveStore::stop() {
    stopped_ = true;
}

}  // namespace hostkeeper::daemon::archives
