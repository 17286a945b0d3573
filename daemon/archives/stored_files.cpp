// ArchiveStore's stored files: opening one for find() (leased, checked by
// who may have written it), hashing what another user may have written,
// refusing what does not match, and sealing what this daemon stores.
#include <fcntl.h>
#include <spdlog/spdlog.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstring>
#include <utility>

#include "daemon/archives/archive_store.hpp"
#include "daemon/archives/package_hash.hpp"
#include "daemon/async/on_worker.hpp"

namespace hostkeeper::daemon::archives {
namespace asio = boost::asio;
namespace fs = std::filesystem;

namespace {

constexpr std::size_t kHexDigits = 64;

std::string_view hex_of(std::string_view name) {
    return name.substr(name.size() - kHexDigits);
}

bool is_provider_name(std::string_view name) {
    return name.rfind("providers/", 0) == 0;
}

// `name` under `dir`, not through a symbolic link at its end; a module of
// this user's own in a shared directory only from a subdirectory that is
// theirs and nobody else's to change.
OwnedFd open_in_store(const fs::path& dir, const std::string& name, bool own_subdir) {
    if (!own_subdir) {
        const fs::path path = dir / name;
        return OwnedFd(::open(path.c_str(), O_RDONLY | O_NOFOLLOW | O_CLOEXEC));
    }
    const fs::path sub = dir / fs::path(name).parent_path();
    const OwnedFd at(::open(sub.c_str(), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC));
    struct stat st {};
    if (at.get() < 0 || ::fstat(at.get(), &st) != 0 || st.st_uid != ::geteuid() ||
        (st.st_mode & 022U) != 0)
        return OwnedFd();
    const std::string file(hex_of(name));
    return OwnedFd(::openat(at.get(), file.c_str(), O_RDONLY | O_NOFOLLOW | O_CLOEXEC));
}

}  // namespace

std::optional<ArchiveStore::Opened> ArchiveStore::open_stored(const std::string& key) {
    if (!mode_) return std::nullopt;  // a refused directory: nothing in it is served
    const bool shared = *mode_ == StoreMode::shared_dir;
    Opened out;
    out.name = stored_name(key);
    if (!locks_.share(hex_of(out.name), out.archive.lease)) {
        spdlog::debug("archive cache: {} is being evicted: a miss", out.name);
        return std::nullopt;
    }
    OwnedFd fd = open_in_store(options_.dir, out.name, shared && !is_provider_name(out.name));
    struct stat st {};
    if (fd.get() < 0 || ::fstat(fd.get(), &st) != 0 || !S_ISREG(st.st_mode) || st.st_size <= 0) {
        stored_.erase(out.name);
        return std::nullopt;
    }
    out.id = identity_of(st);
    if (shared && (st.st_mode & 022U) != 0) {
        // Whoever may write it could change it after it was checked.
        reject(out.name, out.id, "is writable by others than its owner");
        return std::nullopt;
    }
    out.verify = shared && is_provider_name(out.name) && !verified_.contains(out.name, out.id);
    out.archive.fd = std::move(fd);
    out.archive.size = static_cast<std::uint64_t>(st.st_size);
    return out;
}

// "zh:<hex>" of the open file, on the hashing thread; "" when it cannot be read.
asio::awaitable<std::string> ArchiveStore::hash_of(int fd) {
    auto hash = [path = "/proc/self/fd/" + std::to_string(fd)] {
        try {
            return zip_hash(path);
        } catch (const PackageError& e) {
            spdlog::warn("archive cache: cannot hash a stored archive: {}", e.what());
            return std::string();
        }
    };
    return async::on_worker(hashing_.get_executor(), std::move(hash));
}

// The file hashed to `hash`: served when that is its name and it did not
// change meanwhile; removed when it is not.
bool ArchiveStore::accept_hashed(const Opened& opened, const std::string& hash) {
    struct stat st {};
    if (hash.empty() || ::fstat(opened.archive.fd.get(), &st) != 0 ||
        !(identity_of(st) == opened.id))
        return false;  // unreadable, or rewritten while hashed: a miss
    const std::string expected = "zh:" + std::string(hex_of(opened.name));
    if (hash != expected) {
        reject(opened.name, opened.id, "does not match its name (its SHA-256 is " + hash + ")");
        return false;
    }
    verified_.remember(opened.name, opened.id);
    return true;
}

// Counted, logged, and removed when it is still the file found (the
// directory is not sticky: any member may).
void ArchiveStore::reject(const std::string& name, const FileIdentity& id, const std::string& why) {
    const fs::path path = options_.dir / name;
    struct stat st {};
    const bool same = ::lstat(path.c_str(), &st) == 0 && st.st_dev == id.dev && st.st_ino == id.ino;
    const bool removed = same && ::unlink(path.c_str()) == 0;
    ++rejected_;
    stored_.erase(name);
    verified_.forget(name);
    spdlog::warn("archive cache: {} (written by uid {}) {}: {}, never served", path.string(),
                 same ? std::to_string(st.st_uid) : std::string("?"), why,
                 removed ? "removed" : "not removed (" + std::string(std::strerror(errno)) + ")");
}

Archive ArchiveStore::served(Opened opened) {
    Archive& archive = opened.archive;
    // Used now: the last to be evicted (its owner's hits; another user's
    // reads show in its access time).
    ::futimens(archive.fd.get(), nullptr);
    struct stat st {};
    if (mode_ == StoreMode::shared_dir && is_provider_name(opened.name) &&
        ::fstat(archive.fd.get(), &st) == 0)
        verified_.remember(opened.name, identity_of(st));  // as touched
    stored_[opened.name] = Entry{archive.size, fs::file_time_type::clock::now()};
    ++hits_;
    return std::move(archive);
}

// A download about to be stored: in a shared directory, readable by the
// group and writable by nobody (its group is the directory's, setgid).
void ArchiveStore::seal(int fd, const std::string& temp) const {
    if (mode_ != StoreMode::shared_dir) return;
    if (::fchmod(fd, 0440) != 0) {
        const int error = errno;
        throw StoreUnwritable("cannot set the mode of " + temp + ": " + std::strerror(error),
                              error);
    }
}

// Stored by this daemon as `name`: verified already, as it is now.
void ArchiveStore::remember_stored(const std::string& name, int fd, std::uint64_t size) {
    stored_[name] = Entry{size, fs::file_time_type::clock::now()};
    struct stat st {};
    if (::fstat(fd, &st) == 0) verified_.remember(name, identity_of(st));
}

// A lease on what this daemon just stored; empty when an eviction holds it
// (it then survives through its open descriptor, locally).
std::shared_ptr<void> ArchiveStore::lease_of(const std::string& name) const {
    std::shared_ptr<void> lease;
    if (!locks_.share(hex_of(name), lease)) lease.reset();
    return lease;
}

}  // namespace hostkeeper::daemon::archives
