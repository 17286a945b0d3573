#include "daemon/archives/archive_store.hpp"

#include <fcntl.h>
#include <spdlog/spdlog.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <utility>

#include "daemon/archives/package_hash.hpp"
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
    return Archive{fd.reopen(), size, filename_hint};
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
    : io_(std::move(io)), http_(http), options_(std::move(options)), flights_(io_) {
    if (options_.dir.empty()) options_.dir = default_archive_dir();
    try {
        prepare();
        sweep_temp_files();
        scan();
        spdlog::info("archive cache {}: {} archives, {} bytes (at most {})", options_.dir.string(),
                     stored_.size(), stats().bytes, options_.max_bytes);
    } catch (const std::exception& e) {
        spdlog::warn("archive cache {}: {}", options_.dir.string(), e.what());
    }
}

// The directories, 0700 and ours. Throws proto::Error internal.
void ArchiveStore::prepare() {
    try {
        make_private_dirs(options_.dir);
        for (const std::string_view kind : kKinds)
            proto::ensure_private_directory(options_.dir / kind, ::geteuid());
        proto::ensure_private_directory(options_.dir / "tmp", ::geteuid());
    } catch (const std::exception& e) {
        throw Error(ErrorCode::internal,
                    "the archive cache directory " + options_.dir.string() + ": " + e.what());
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

// What the directory holds now, whoever stored it.
void ArchiveStore::scan() {
    stored_.clear();
    for (const std::string_view kind : kKinds) {
        std::error_code ec;
        for (const auto& entry : fs::directory_iterator(options_.dir / kind, ec)) {
            const std::string name = entry.path().filename().string();
            if (!is_hex_name(name) || !entry.is_regular_file(ec) || entry.is_symlink(ec)) continue;
            const std::uintmax_t size = entry.file_size(ec);
            if (ec || size == 0) continue;
            const auto used = entry.last_write_time(ec);
            if (ec) continue;
            stored_[std::string(kind) + "/" + name] = Entry{size, used};
        }
    }
}

std::optional<Archive> ArchiveStore::find(const std::string& key) {
    check_archive_key(key);
    const fs::path path = options_.dir / key;
    OwnedFd fd(::open(path.c_str(), O_RDONLY | O_NOFOLLOW | O_CLOEXEC));
    struct stat st {};
    if (fd.get() < 0 || ::fstat(fd.get(), &st) != 0 || !S_ISREG(st.st_mode) || st.st_size <= 0) {
        stored_.erase(key);
        return std::nullopt;
    }
    ::futimens(fd.get(), nullptr);  // used now: the last to be evicted
    const auto size = static_cast<std::uint64_t>(st.st_size);
    stored_[key] = Entry{size, fs::file_time_type::clock::now()};
    ++hits_;
    return Archive{std::move(fd), size, std::string()};
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
    if (std::optional<Archive> hit = find(request.key)) co_return std::move(*hit);
    if (stopped_) throw Error(ErrorCode::internal, "hostkeeperd is stopping");
    if (store_resting()) {
        ++passed_through_;
        throw StoreUnwritable(store_error_, 0);
    }
    const std::string key = request.key;
    // Named first (async/toolchain.hpp).
    auto work = [this, request = std::move(request)]() mutable {
        return download(std::move(request));
    };
    auto copy = [](const Archive& archive) { return archive.duplicate(); };
    auto shared = flights_.run(key, std::move(work), copy);
    co_return co_await std::move(shared);
}

// One download, counted.
asio::awaitable<Archive> ArchiveStore::download(ArchiveRequest request) {
    try {
        // Named first (async/toolchain.hpp).
        auto inserting = insert(std::move(request));
        Archive archive = co_await std::move(inserting);
        ++downloads_;
        if (!store_error_.empty()) {
            spdlog::info("archive cache {}: archives are stored again", options_.dir.string());
            store_error_.clear();
        }
        co_return archive;
    } catch (const StoreUnwritable& e) {
        store_failed(e);
        throw;
    } catch (...) {
        ++failures_;
        throw;
    }
}

asio::awaitable<Archive> ArchiveStore::insert(ArchiveRequest request) {
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
    prepare_to_store();
    std::string temp = (options_.dir / "tmp" / (std::to_string(::getpid()) + "-XXXXXX")).string();
    const OwnedFd out(::mkostemp(temp.data(), O_CLOEXEC));
    if (out.get() < 0) {
        const int error = errno;
        throw StoreUnwritable("cannot create a file in " + (options_.dir / "tmp").string() + ": " +
                                  std::strerror(error),
                              error);
    }
    // Removed on every way out but success.
    struct RemoveUnlessKept {
        const std::string& path;
        bool keep = false;
        ~RemoveUnlessKept() {
            if (!keep) ::unlink(path.c_str());
        }
    } partial{temp};

    const std::string hint = filename_of(request.url);
    const std::string key = request.key;
    // Named first (async/toolchain.hpp).
    auto downloading = download_verified(http_, hashing_.get_executor(), out.get(), temp,
                                         std::move(request.url), std::move(request.credentials),
                                         std::move(expected), request.what, options_.fetch_timeout);
    const DownloadedFile file = co_await std::move(downloading);
    if (file.size == 0)
        throw Error(ErrorCode::registry_failed, "downloading " + request.what + ": it is empty");
    // Opened before it is renamed: from here on, an eviction cannot take it.
    OwnedFd in(::open(temp.c_str(), O_RDONLY | O_CLOEXEC));
    if (in.get() < 0) {
        const int error = errno;
        throw StoreUnwritable("cannot read " + temp + ": " + std::strerror(error), error);
    }
    const fs::path path = options_.dir / key;
    if (::rename(temp.c_str(), path.c_str()) != 0) {
        const int error = errno;
        throw StoreUnwritable(
            "cannot store " + request.what + " as " + path.string() + ": " + std::strerror(error),
            error);
    }
    partial.keep = true;
    stored_[key] = Entry{file.size, fs::file_time_type::clock::now()};
    evict(key);
    co_return Archive{std::move(in), file.size, hint};
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

// Least recently used first, until what is stored (by any daemon) fits.
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
        if (::unlink(path.c_str()) != 0 && errno != ENOENT) {
            spdlog::warn("archive cache: cannot remove {}: {}", path.string(),
                         std::strerror(errno));
            continue;
        }
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
    s.store_problem = store_error_;
    return s;
}

void ArchiveStore::stop() {
    stopped_ = true;
}

}  // namespace hostkeeper::daemon::archives
