// ArchiveStore's stored files: opening one for find() (leased, checked by
// who may have written it), hashing what another user may have written (a
// copy of our own when it is another user's), refusing what does not match,
// and sealing what this daemon stores.
#include <fcntl.h>
#include <spdlog/spdlog.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstdint>
#include <cstring>
#include <utility>

#include "daemon/archives/archive_store.hpp"
#include "daemon/archives/package_hash.hpp"
#include "daemon/archives/shared_store.hpp"
#include "daemon/archives/store_names.hpp"
#include "daemon/archives/verified_download.hpp"
#include "daemon/async/on_worker.hpp"

namespace hostkeeper::daemon::archives {
namespace asio = boost::asio;
namespace fs = std::filesystem;

namespace {

// `file` in the directory open as `dir`, for reading: not through a
// symbolic link, never waiting (a FIFO or a device opens at once and is no
// regular file), with `st` of what was opened; empty when it cannot be opened.
OwnedFd open_in_store(int dir, const std::string& file, struct stat& st) {
    if (dir < 0) return OwnedFd();
    OwnedFd fd(
        ::openat(dir, file.c_str(), O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_NOCTTY | O_CLOEXEC));
    if (fd.get() < 0 || ::fstat(fd.get(), &st) != 0) return OwnedFd();
    return fd;
}

// Reads of a regular file wait again (as sendfile and the hashing expect).
bool blocking(int fd) {
    const int flags = ::fcntl(fd, F_GETFL);
    return flags >= 0 && ::fcntl(fd, F_SETFL, flags & ~O_NONBLOCK) == 0;
}

}  // namespace

std::optional<ArchiveStore::Opened> ArchiveStore::open_stored(const std::string& key) {
    if (!mode_ || !dirs_) return std::nullopt;  // a refused directory: nothing in it is served
    const bool shared = *mode_ == StoreMode::shared_dir;
    Opened out;
    out.name = stored_name(key);
    if (!locks_.share(hex_of(out.name), out.archive.lease)) {
        spdlog::debug("archive cache: {} is being evicted: a miss", out.name);
        return std::nullopt;
    }
    const auto [dir, file] = locate(*dirs_, out.name);
    struct stat st {};
    OwnedFd fd = open_in_store(dir, file, st);
    if (fd.get() < 0 || (S_ISREG(st.st_mode) && st.st_size <= 0)) {
        stored_.erase(out.name);
        return std::nullopt;
    }
    out.id = identity_of(st);
    if (!S_ISREG(st.st_mode)) {
        reject(out.name, out.id, "is no regular file");
        return std::nullopt;
    }
    if (static_cast<std::uint64_t>(st.st_size) > kMaxPackageSize) {
        reject(out.name, out.id, "is larger than a package may be");
        return std::nullopt;
    }
    if (shared && (st.st_mode & 022U) != 0) {
        // Whoever may write it could change it after it was checked.
        reject(out.name, out.id, "is writable by others than its owner");
        return std::nullopt;
    }
    if (!blocking(fd.get())) return std::nullopt;
    out.foreign = st.st_uid != ::geteuid();
    out.verify = shared && is_provider_name(out.name) &&
                 (out.foreign || !verified_.contains(out.name, out.id));
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

// Another user's package, copied while hashed into a file of ours, which
// is served (and stored under the name) when it matched.
asio::awaitable<std::optional<Archive>> ArchiveStore::adopt(Opened opened) {
    const std::shared_ptr<const StoreDirs> dirs = dirs_;
    std::string temp = "/proc/self/fd/" + std::to_string(dirs->tmp.get()) + "/" +
                       std::to_string(::getpid()) + "-XXXXXX";
    const OwnedFd copy(::mkostemp(temp.data(), O_CLOEXEC));
    if (copy.get() < 0) co_return std::nullopt;  // nowhere to copy it: a miss
    const std::string copy_file = fs::path(temp).filename().string();
    auto hash = [from = opened.archive.fd.get(), to = copy.get(), size = opened.archive.size] {
        try {
            return zip_hash_copy(from, to, size);
        } catch (const PackageError& e) {
            spdlog::warn("archive cache: cannot copy a stored archive: {}", e.what());
            return std::string();
        }
    };
    // Named first.
    auto hashing = async::on_worker(hashing_.get_executor(), std::move(hash));
    const std::string hashed = co_await std::move(hashing);
    co_return adopted(std::move(opened), *dirs, copy, copy_file, hashed);
}

std::optional<Archive> ArchiveStore::adopted(Opened opened, const StoreDirs& dirs,
                                             const OwnedFd& copy, const std::string& copy_file,
                                             const std::string& hash) {
    const int tmp = dirs.tmp.get();
    const std::string expected = "zh:" + std::string(hex_of(opened.name));
    struct stat st {};
    if (hash != expected || ::fchmod(copy.get(), 0440) != 0 || ::fstat(copy.get(), &st) != 0) {
        ::unlinkat(tmp, copy_file.c_str(), 0);
        if (!hash.empty() && hash != expected)
            reject(opened.name, opened.id, "does not match its name (its SHA-256 is " + hash + ")");
        return std::nullopt;
    }
    const auto [at, file] = locate(dirs, opened.name);
    if (const int error = rename_into_place(tmp, copy_file, at, file, options_.dir / opened.name)) {
        spdlog::debug("archive cache: cannot store the copy of {}: {}", opened.name,
                      std::strerror(error));
        ::unlinkat(tmp, copy_file.c_str(), 0);  // served all the same, from the open copy
    }
    opened.id = identity_of(st);
    verified_.remember(opened.name, opened.id);
    opened.archive.fd = copy.reopen();
    return served(std::move(opened));
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

// Removed when it is still the file found (the directory is not sticky:
// any member may), counted and logged. Readers that opened the same file
// before it was refused (a prefetch and Terraform's own request) refuse it
// again: each tries to remove it, and that file is counted and logged once.
void ArchiveStore::reject(const std::string& name, const FileIdentity& id, const std::string& why) {
    const fs::path path = options_.dir / name;
    const auto [dir, file] = dirs_ ? locate(*dirs_, name) : std::pair<int, std::string>{-1, ""};
    struct stat st {};
    const bool found = dir >= 0 && ::fstatat(dir, file.c_str(), &st, AT_SYMLINK_NOFOLLOW) == 0;
    const bool same = found && st.st_dev == id.dev && st.st_ino == id.ino;
    if (same || !found) {  // else a file stored since (a download's) stays known
        stored_.erase(name);
        verified_.forget(name);
    }
    // A directory under the name: removed, or moved aside (make_way).
    const bool removed = same && (S_ISREG(st.st_mode) ? ::unlinkat(dir, file.c_str(), 0) == 0
                                                      : make_way(dir, file, path));
    const int error = errno;
    if (const auto [last, first] = refused_.try_emplace(name, id); !first) {
        if (last->second == id) return;
        last->second = id;
    }
    ++rejected_;
    const std::string fate = removed ? "removed"
                             : same  ? "not removed (" + std::string(std::strerror(error)) + ")"
                                     : "no longer under its name";
    spdlog::warn("archive cache: {} (written by uid {}) {}: {}, never served", path.string(),
                 same ? std::to_string(st.st_uid) : std::string("?"), why, fate);
}

Archive ArchiveStore::served(Opened opened) {
    Archive& archive = opened.archive;
    // Used now: the last to be evicted (its owner's hits; another user's
    // reads show in its access time).
    // Only this user's own files change here, and nobody else can write
    // those (0440): known again as touched.
    ::futimens(archive.fd.get(), nullptr);
    struct stat st {};
    const bool known = ::fstat(archive.fd.get(), &st) == 0;
    if (mode_ == StoreMode::shared_dir && is_provider_name(opened.name) && known &&
        st.st_uid == ::geteuid() && (st.st_mode & 0222U) == 0 && st.st_dev == opened.id.dev &&
        st.st_ino == opened.id.ino)
        verified_.remember(opened.name, identity_of(st));
    stored_[opened.name] =
        Entry{known ? allocated_bytes(st) : archive.size, fs::file_time_type::clock::now()};
    ++hits_;
    return std::move(archive);
}

// A download about to be stored: in a shared directory writable by nobody,
// a provider package readable by the group (its group is the directory's,
// setgid), a module archive (perhaps a private source's) by its owner only.
void ArchiveStore::seal(int fd, const std::string& temp, bool provider) const {
    if (mode_ != StoreMode::shared_dir) return;
    if (::fchmod(fd, provider ? 0440 : 0400) != 0) {
        const int error = errno;
        throw StoreUnwritable("cannot set the mode of " + temp + ": " + std::strerror(error),
                              error);
    }
}

// Stored by this daemon as `name`: verified already, as it is now.
void ArchiveStore::remember_stored(const std::string& name, int fd, std::uint64_t size) {
    struct stat st {};
    const bool known = ::fstat(fd, &st) == 0;
    stored_[name] = Entry{known ? allocated_bytes(st) : size, fs::file_time_type::clock::now()};
    if (known) verified_.remember(name, identity_of(st));
}

// A lease on what this daemon just stored; empty when an eviction holds it
// (it then survives through its open descriptor, locally).
std::shared_ptr<void> ArchiveStore::lease_of(const std::string& name) const {
    std::shared_ptr<void> lease;
    if (!locks_.share(hex_of(name), lease)) lease.reset();
    return lease;
}

}  // namespace hostkeeper::daemon::archives
