#include "daemon/archives/archive_store.hpp"

#include <dirent.h>
#include <fcntl.h>
#include <spdlog/spdlog.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/detached.hpp>
#include <cctype>
#include <cerrno>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <string_view>
#include <utility>

#include "daemon/archives/package_hash.hpp"
#include "daemon/archives/shared_store.hpp"
#include "daemon/archives/store_names.hpp"
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
constexpr auto kStaleTemp = std::chrono::hours(1);

bool is_hex_name(std::string_view name) {
    return name.size() == kHexDigits && std::all_of(name.begin(), name.end(), [](char c) {
               return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f');
           });
}

bool is_uid_name(std::string_view name) {
    return !name.empty() && name.size() <= 10 &&
           std::all_of(name.begin(), name.end(), [](char c) { return c >= '0' && c <= '9'; });
}

// A temp file's name as insert() makes it: "<pid>-" and mkostemp's six characters.
bool is_temp_name(std::string_view name) {
    const auto dash = name.find('-');
    const auto alnum = [](char c) { return std::isalnum(static_cast<unsigned char>(c)) != 0; };
    return dash != std::string_view::npos && dash > 0 && name.size() == dash + 7 &&
           std::all_of(name.begin(), name.begin() + static_cast<std::ptrdiff_t>(dash),
                       [](char c) { return c >= '0' && c <= '9'; }) &&
           std::all_of(name.begin() + static_cast<std::ptrdiff_t>(dash) + 1, name.end(), alnum);
}

// The names in the directory open as `dir`, read through a description of its own.
std::vector<std::string> names_in(int dir) {
    std::vector<std::string> names;
    const int fd = ::openat(dir, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (fd < 0) return names;
    DIR* const listing = ::fdopendir(fd);
    if (listing == nullptr) {
        ::close(fd);
        return names;
    }
    while (const dirent* entry = ::readdir(listing)) names.emplace_back(entry->d_name);
    ::closedir(listing);
    return names;
}

// A file time from stat: times before 1970 or after 2200 (which anyone may
// set on their own file) are taken as those bounds.
fs::file_time_type file_time_of(const struct timespec& at) {
    constexpr std::int64_t kLatest = 7'258'118'400;  // 2200-01-01
    const std::int64_t seconds = std::clamp<std::int64_t>(at.tv_sec, 0, kLatest);
    const auto since_epoch = std::chrono::seconds(seconds) + std::chrono::nanoseconds(at.tv_nsec);
    return std::chrono::file_clock::from_sys(std::chrono::sys_time<std::chrono::nanoseconds>(
        std::chrono::duration_cast<std::chrono::nanoseconds>(since_epoch)));
}

std::uint64_t saturating_sum(std::uint64_t a, std::uint64_t b) {
    return b > UINT64_MAX - a ? UINT64_MAX : a + b;
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
    if (e.error() == EROFS) {
        // Read-only where the user's own directory is not: the service's
        // sandbox (ProtectHome=read-only), in which a directory missing when
        // it started (deleted by the user) is not made writable.
        return "the cache directory " + dir.string() +
               " is on a read-only file system here: under hostkeeperd.service's sandbox a "
               "directory that was missing when the service started stays read-only; run "
               "hostkeeper setup --registry-cache (systemd then makes it before each start), "
               "then hostkeeper stop" +
               passed;
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

namespace {

// This user's own subdirectory `name` of `parent`; one that another user
// made under that name is moved aside (renamed `name`.moved-aside.<pid>)
// and made again. Throws std::runtime_error.
OwnedFd own_subdir(int parent, const std::string& name, const fs::path& shown, mode_t mode,
                   gid_t group) {
    try {
        return OwnedFd(ensure_own_subdir(parent, name, shown, ::geteuid(), mode, group).release());
    } catch (const std::runtime_error& e) {
        const std::string aside = name + ".moved-aside." + std::to_string(::getpid());
        if (::renameat(parent, name.c_str(), parent, aside.c_str()) != 0) throw;
        spdlog::warn("archive cache: {}: moved aside as {}", e.what(), aside);
    }
    return OwnedFd(ensure_own_subdir(parent, name, shown, ::geteuid(), mode, group).release());
}

}  // namespace

// The directories: 0700 and ours, or a group's (shared_store.hpp), each
// opened once, and the lock file. Throws proto::Error internal.
void ArchiveStore::prepare() {
    const fs::path& dir = options_.dir;
    const uid_t uid = ::geteuid();
    try {
        std::error_code ec;
        if (!fs::exists(fs::symlink_status(dir, ec))) make_private_dirs(dir);
        StoreMode mode{};
        auto dirs = std::make_shared<StoreDirs>();
        dirs->top = OwnedFd(open_store_dir(dir, uid, nullptr, mode).release());
        struct stat top {};
        if (::fstat(dirs->top.get(), &top) != 0)
            throw fs::filesystem_error("cannot examine the directory", dir,
                                       std::error_code(errno, std::generic_category()));
        const gid_t group = top.st_gid;
        const auto sub = [&](int at, const std::string& name, const fs::path& shown) {
            if (mode == StoreMode::private_dir)
                return OwnedFd(ensure_own_subdir(at, name, shown, uid, 0700).release());
            return OwnedFd(ensure_shared_subdir(at, name, shown, group).release());
        };
        dirs->providers = sub(dirs->top.get(), "providers", dir / "providers");
        dirs->modules = sub(dirs->top.get(), "modules", dir / "modules");
        OwnedFd tmp = sub(dirs->top.get(), "tmp", dir / "tmp");
        dirs->tmp_path = dir / "tmp";
        if (mode == StoreMode::private_dir) {
            dirs->own_modules = OwnedFd(::fcntl(dirs->modules.get(), F_DUPFD_CLOEXEC, 0));
            dirs->tmp = std::move(tmp);
        } else {
            const std::string own = std::to_string(uid);
            dirs->own_modules =
                own_subdir(dirs->modules.get(), own, dir / "modules" / own, 02750, group);
            dirs->tmp = own_subdir(tmp.get(), own, dir / "tmp" / own, 02700, group);
            dirs->tmp_path /= own;
        }
        if (!locks_.enabled() || mode_ != mode)
            locks_.open(dirs->top.get(), dir / ".lock", mode == StoreMode::shared_dir);
        dirs_ = std::move(dirs);
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
// a try block in insert() would trip GCC bug 109224.
void ArchiveStore::prepare_to_store() {
    try {
        prepare();
    } catch (const Error& e) {
        throw StoreUnwritable(e.what(), 0);
    }
    sweep_temp_files();
}

// Downloads a daemon of this user's left behind when it died: regular
// files named as insert() names them, in this user's own temp directory.
void ArchiveStore::sweep_temp_files() const {
    if (!dirs_) return;
    const int tmp = dirs_->tmp.get();
    const std::time_t now = std::time(nullptr);
    for (const std::string& name : names_in(tmp)) {
        struct stat st {};
        if (!is_temp_name(name) || ::fstatat(tmp, name.c_str(), &st, AT_SYMLINK_NOFOLLOW) != 0 ||
            !S_ISREG(st.st_mode) || st.st_uid != ::geteuid() ||
            now - st.st_mtim.tv_sec <= std::chrono::seconds(kStaleTemp).count())
            continue;
        spdlog::info("archive cache: removing {}, a download abandoned",
                     (dirs_->tmp_path / name).string());
        ::unlinkat(tmp, name.c_str(), 0);
    }
}

// What the directory holds now, whoever stored it: DIR/KIND/<hex>, and in
// a shared directory every user's DIR/modules/<uid>/<hex>.
void ArchiveStore::scan() {
    stored_.clear();
    if (!dirs_) return;
    for (const std::string_view kind : kKinds) {
        const int at = kind == "providers" ? dirs_->providers.get() : dirs_->modules.get();
        for (const std::string& name : names_in(at)) {
            if (is_hex_name(name)) {
                scan_file(at, name, std::string(kind) + "/" + name);
            } else if (kind == "modules" && is_uid_name(name)) {
                // Another user's, closed to us: not counted.
                const OwnedFd user(
                    ::openat(at, name.c_str(), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC));
                if (user.get() < 0) continue;
                const std::string under = std::string(kind) + "/" + name + "/";
                for (const std::string& hex : names_in(user.get())) {
                    if (is_hex_name(hex)) scan_file(user.get(), hex, under + hex);
                }
            }
        }
    }
}

// One stored file (`file` in the directory open as `dir`), used when it was
// last written or (another user's hit) last read, whichever is later; one
// larger than a package may be is left out.
void ArchiveStore::scan_file(int dir, const std::string& file, const std::string& name) {
    struct stat st {};
    if (::fstatat(dir, file.c_str(), &st, AT_SYMLINK_NOFOLLOW) != 0 || !S_ISREG(st.st_mode) ||
        st.st_size <= 0 || static_cast<std::uint64_t>(st.st_size) > kMaxPackageSize)
        return;
    const bool read_later =
        st.st_atim.tv_sec > st.st_mtim.tv_sec ||
        (st.st_atim.tv_sec == st.st_mtim.tv_sec && st.st_atim.tv_nsec > st.st_mtim.tv_nsec);
    stored_[name] = Entry{allocated_bytes(st), file_time_of(read_later ? st.st_atim : st.st_mtim)};
}

std::pair<int, std::string> ArchiveStore::locate(const StoreDirs& dirs, const std::string& name) {
    const std::string file(hex_of(name));
    if (is_provider_name(name)) return {dirs.providers.get(), file};
    if (name.size() == std::string("modules/").size() + kHexDigits)
        return {dirs.modules.get(), file};
    const std::string own = "modules/" + std::to_string(::geteuid()) + "/";
    return {name.rfind(own, 0) == 0 ? dirs.own_modules.get() : -1, file};
}

std::string ArchiveStore::stored_name(const std::string& key) const {
    if (mode_ != StoreMode::shared_dir || is_provider_name(key)) return key;
    return "modules/" + std::to_string(::geteuid()) + "/" + std::string(hex_of(key));
}

asio::awaitable<std::optional<Archive>> ArchiveStore::find(const std::string& key) {
    check_archive_key(key);
    std::optional<Opened> opened = open_stored(key);
    if (!opened) co_return std::nullopt;
    if (opened->verify && opened->foreign) {
        auto adopting = adopt(std::move(*opened));  // named first
        co_return co_await std::move(adopting);
    }
    if (opened->verify) {
        // Named first.
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
    if (is_provider_name(request.key) && !request.verify) {
        throw Error(ErrorCode::bad_request,
                    request.what + ": a provider package is always verified before it is stored");
    }
    auto finding = find(request.key);  // named first
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
        auto waiting = flight->growing->changed();  // named first
        co_await std::move(waiting);
    }
    if (flight->growing->error()) std::rethrow_exception(flight->growing->error());
    // Leased from the start: once stored, no eviction takes it while it is sent.
    co_return Archive{flight->file.reopen(), flight->growing->written(), flight->hint,
                      flight->growing, lease_of(name)};
}

// Logged once per cause (an errno) until an archive is stored again.
void ArchiveStore::store_failed(const StoreUnwritable& e) {
    ++passed_through_;
    store_error_ = store_problem(options_.dir, e);
    store_failed_at_ = std::chrono::steady_clock::now();
    if (logged_causes_.insert(e.error()).second)
        spdlog::warn("archive cache: {} ({})", store_error_, e.what());
}

// A verified download that could not be stored: its readers get it from
// its open file. Something in the way of its one name (make_way could not
// clear it) leaves the directory to the other archives; any other failure
// is the directory's (store_failed).
void ArchiveStore::not_kept(const StoreUnwritable& e) {
    if (!in_the_way(e.error())) {
        store_failed(e);
        return;
    }
    ++passed_through_;
    if (logged_causes_.insert(e.error()).second) {
        spdlog::warn("archive cache: {}; such archives are served from their download, not kept",
                     e.what());
    } else {
        spdlog::debug("archive cache: {}; served from its download, not kept", e.what());
    }
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
        total = saturating_sum(total, entry.size);
        if (key != keep) by_age.emplace_back(entry.used, key);
    }
    std::sort(by_age.begin(), by_age.end());
    for (const auto& [used, key] : by_age) {
        if (total <= options_.max_bytes) break;
        const auto size = stored_[key].size;
        const fs::path path = options_.dir / key;
        const auto [at, file] = locate(*dirs_, key);
        if (at < 0) continue;  // another user's module archive: theirs to evict
        std::shared_ptr<void> held;
        if (!locks_.take(hex_of(key), held)) {
            spdlog::debug("archive cache: {} is being served: not evicted", key);
            continue;
        }
        if (::unlinkat(at, file.c_str(), 0) != 0 && errno != ENOENT) {
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
    for (const auto& [key, entry] : stored_) s.bytes = saturating_sum(s.bytes, entry.size);
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
