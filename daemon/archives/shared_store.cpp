#include "daemon/archives/shared_store.hpp"

#include <fcntl.h>
#include <spdlog/spdlog.h>
#include <unistd.h>

#include <array>
#include <atomic>
#include <cerrno>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <stdexcept>
#include <vector>

#include "proto/unique_fd.hpp"

namespace hostkeeper::daemon::archives {
namespace fs = std::filesystem;

namespace {

constexpr std::size_t kLockDigits = 15;  // 60 bits: any off_t holds them

std::string octal(mode_t mode) {
    std::array<char, 8> text{};
    std::snprintf(text.data(), text.size(), "%04o", static_cast<unsigned>(mode & 07777U));
    return text.data();
}

constexpr int kDirFlags = O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC;

struct stat stat_dir(int fd, const fs::path& dir) {
    struct stat st {};
    if (::fstat(fd, &st) != 0)
        throw std::runtime_error("cannot read " + dir.string() + ": " + std::strerror(errno));
    if (!S_ISDIR(st.st_mode)) throw std::runtime_error(dir.string() + " is not a directory");
    return st;
}

// `name` in the directory open as `at`, a directory and not a symbolic link.
proto::UniqueFd open_dir_at(int at, const std::string& name, const fs::path& shown) {
    proto::UniqueFd fd(::openat(at, name.c_str(), kDirFlags));
    if (fd.get() < 0) {
        const int error = errno;
        throw std::runtime_error("cannot open " + shown.string() + ": " +
                                 (error == ELOOP || error == ENOTDIR
                                      ? std::string("it is not a directory (a link?)")
                                      : std::string(std::strerror(error))));
    }
    return fd;
}

// `name` made in `at` with `mode` when missing; true when this call made it.
bool make_dir_at(int at, const std::string& name, mode_t mode, const fs::path& shown) {
    if (::mkdirat(at, name.c_str(), mode) == 0) return true;
    if (errno != EEXIST)
        throw std::runtime_error("cannot create " + shown.string() + ": " + std::strerror(errno));
    return false;
}

// mkdir's mode passes through the umask: set it on the directory made,
// through its descriptor, when it is still ours.
void set_mode(int fd, const struct stat& st, mode_t mode, const fs::path& shown) {
    if (st.st_uid != ::geteuid() || (st.st_mode & 07777U) == mode) return;
    if (::fchmod(fd, mode) != 0)
        throw std::runtime_error("cannot set the mode of " + shown.string() + ": " +
                                 std::strerror(errno));
}

// Why `st` is no shared directory of group `group` we are in; "" when it is one.
std::string shared_fault(const struct stat& st, bool (*in_group)(gid_t)) {
    if ((st.st_mode & S_IWOTH) != 0) return "it is writable by others";
    if ((st.st_mode & S_ISVTX) != 0) return "it is sticky (group members could not replace files)";
    if ((st.st_mode & S_IRWXG) != S_IRWXG) return "it is not readable and writable by its group";
    if ((st.st_mode & S_ISGID) == 0) return "it is not setgid (files would not take its group)";
    if (!in_group(st.st_gid))
        return "its group " + std::to_string(st.st_gid) + " is not one of yours";
    return {};
}

const char* const kAccepted =
    "an archive directory is either private (yours, mode 0700) or shared by a group (setgid, "
    "readable and writable by the group, not writable by others, not sticky, a group you are "
    "in: chgrp GROUP DIR; chmod 2770 DIR)";

}  // namespace

bool in_my_groups(gid_t gid) {
    if (::getegid() == gid) return true;
    const int n = ::getgroups(0, nullptr);
    if (n <= 0) return false;
    std::vector<gid_t> groups(static_cast<std::size_t>(n));
    const int got = ::getgroups(n, groups.data());
    for (int i = 0; i < got; ++i) {
        if (groups[static_cast<std::size_t>(i)] == gid) return true;
    }
    return false;
}

proto::UniqueFd open_store_dir(const fs::path& dir, uid_t uid, bool (*in_group)(gid_t),
                               StoreMode& mode) {
    if (in_group == nullptr) in_group = in_my_groups;
    proto::UniqueFd fd(::open(dir.c_str(), kDirFlags));
    if (fd.get() < 0) {
        struct stat link {};
        if ((errno == ELOOP || errno == ENOTDIR) && ::lstat(dir.c_str(), &link) == 0 &&
            S_ISLNK(link.st_mode))
            throw std::runtime_error(dir.string() + " is a symbolic link; " + kAccepted);
        throw std::runtime_error("cannot read " + dir.string() + ": " + std::strerror(errno));
    }
    const struct stat st = stat_dir(fd.get(), dir);
    if (st.st_uid == uid && (st.st_mode & 077U) == 0) {
        mode = StoreMode::private_dir;
        return fd;
    }
    if ((st.st_mode & S_IRWXG) == 0 && st.st_uid != uid) {
        throw std::runtime_error(dir.string() + " belongs to uid " + std::to_string(st.st_uid) +
                                 ", not to you, and is not shared with a group; " + kAccepted);
    }
    const std::string fault = shared_fault(st, in_group);
    if (!fault.empty()) {
        throw std::runtime_error(dir.string() + " has mode " + octal(st.st_mode) + ": " + fault +
                                 "; " + kAccepted);
    }
    if (st.st_uid != 0 && st.st_uid != uid) {
        throw std::runtime_error(dir.string() + " belongs to uid " + std::to_string(st.st_uid) +
                                 ", who could open it to everyone; a shared archive directory "
                                 "belongs to root or to you");
    }
    mode = StoreMode::shared_dir;
    return fd;
}

StoreMode check_store_dir(const fs::path& dir, uid_t uid, bool (*in_group)(gid_t)) {
    StoreMode mode{};
    open_store_dir(dir, uid, in_group, mode);
    return mode;
}

proto::UniqueFd ensure_shared_subdir(int top, const std::string& name, const fs::path& shown,
                                     gid_t group) {
    const bool made = make_dir_at(top, name, 02770, shown);
    proto::UniqueFd fd = open_dir_at(top, name, shown);
    struct stat st = stat_dir(fd.get(), shown);
    if (made) {
        set_mode(fd.get(), st, 02770, shown);
        st = stat_dir(fd.get(), shown);
    }
    const std::string fault = shared_fault(st, in_my_groups);
    if (!fault.empty() || st.st_gid != group) {
        throw std::runtime_error(
            shown.string() + " has mode " + octal(st.st_mode) + " and group " +
            std::to_string(st.st_gid) + ": " +
            (fault.empty() ? "not the group of the directory above it" : fault) +
            "; a shared archive directory's subdirectories are 2770 with its group (a member "
            "whose umask or tools made it otherwise: chgrp GROUP DIR; chmod 2770 DIR)");
    }
    return fd;
}

proto::UniqueFd ensure_own_subdir(int parent, const std::string& name, const fs::path& shown,
                                  uid_t uid, mode_t mode, gid_t group) {
    make_dir_at(parent, name, mode, shown);
    proto::UniqueFd fd(::openat(parent, name.c_str(), kDirFlags));
    struct stat st {};
    if (fd.get() < 0 || ::fstat(fd.get(), &st) != 0 || !S_ISDIR(st.st_mode) || st.st_uid != uid ||
        (st.st_mode & 022U) != 0) {
        throw std::runtime_error(shown.string() +
                                 " is not a directory of yours that only you can change "
                                 "(remove it; the daemon makes it again, " +
                                 octal(mode) + ")");
    }
    if (group != static_cast<gid_t>(-1) && st.st_gid != group) {
        if (::fchown(fd.get(), static_cast<uid_t>(-1), group) != 0 || ::fstat(fd.get(), &st) != 0)
            throw std::runtime_error("cannot give " + shown.string() + " the group " +
                                     std::to_string(group) + ": " + std::strerror(errno));
        st.st_mode &= ~static_cast<mode_t>(S_ISGID);  // chown may clear it: set again
    }
    set_mode(fd.get(), st, mode, shown);
    return fd;
}

namespace {

constexpr int kAsideAttempts = 8;
constexpr int kPlaceAttempts = 3;

// NAME.moved-aside.PID.N, N unpredictable to other members (who could
// otherwise make that name first).
std::string aside_name(const std::string& name) {
    static std::atomic<std::uint64_t> count{0};
    const auto now =
        static_cast<std::uint64_t>(std::chrono::steady_clock::now().time_since_epoch().count());
    std::array<char, 17> hex{};
    std::snprintf(hex.data(), hex.size(), "%016llx",
                  static_cast<unsigned long long>(now ^ (count.fetch_add(1) << 48U)));
    return name + ".moved-aside." + std::to_string(::getpid()) + "." + hex.data();
}

// renameat() within `dir` that never replaces what is at `to`.
int rename_aside(int dir, const std::string& from, const std::string& to) {
    if (::renameat2(dir, from.c_str(), dir, to.c_str(), RENAME_NOREPLACE) == 0) return 0;
    if (errno != EINVAL && errno != ENOSYS) return -1;
    // A file system without RENAME_NOREPLACE: the name checked free first.
    struct stat st {};
    if (::fstatat(dir, to.c_str(), &st, AT_SYMLINK_NOFOLLOW) == 0) {
        errno = EEXIST;
        return -1;
    }
    return ::renameat(dir, from.c_str(), dir, to.c_str());
}

}  // namespace

bool make_way(int dir, const std::string& name, const fs::path& shown) {
    struct stat st {};
    if (::fstatat(dir, name.c_str(), &st, AT_SYMLINK_NOFOLLOW) != 0) return errno == ENOENT;
    if (S_ISREG(st.st_mode)) return true;
    const bool directory = S_ISDIR(st.st_mode);
    const char* const what = directory ? "a directory" : "no regular file";
    if (::unlinkat(dir, name.c_str(), directory ? AT_REMOVEDIR : 0) == 0 || errno == ENOENT) {
        spdlog::warn("archive cache: {} (uid {}) was {}: removed", shown.string(), st.st_uid, what);
        return true;
    }
    const int removing = errno;
    int moving = 0;
    for (int attempt = 0; attempt < kAsideAttempts; ++attempt) {
        const std::string aside = aside_name(name);
        if (rename_aside(dir, name, aside) == 0) {
            spdlog::warn(
                "archive cache: {} (uid {}) was {} that cannot be removed ({}): moved "
                "aside as {}",
                shown.string(), st.st_uid, what, std::strerror(removing), aside);
            return true;
        }
        moving = errno;
        if (moving == ENOENT) return true;
        if (moving != EEXIST) break;
    }
    spdlog::debug("archive cache: {} (uid {}) is {}, neither removed ({}) nor moved aside ({})",
                  shown.string(), st.st_uid, what, std::strerror(removing), std::strerror(moving));
    errno = moving != 0 ? moving : removing;  // the log may have changed it
    return false;
}

bool in_the_way(int error) {
    return error == EISDIR || error == ENOTEMPTY || error == EEXIST;
}

int rename_into_place(int from_dir, const std::string& from, int to_dir, const std::string& to,
                      const fs::path& shown) {
    int error = 0;
    for (int attempt = 0; attempt < kPlaceAttempts; ++attempt) {
        make_way(to_dir, to, shown);
        if (::renameat(from_dir, from.c_str(), to_dir, to.c_str()) == 0) return 0;
        error = errno;
        if (!in_the_way(error)) break;
    }
    return error;
}

FileIdentity identity_of(const struct stat& st) {
    constexpr std::int64_t kNano = 1'000'000'000;
    return FileIdentity{st.st_dev, st.st_ino, st.st_size,
                        std::int64_t{st.st_mtim.tv_sec} * kNano + st.st_mtim.tv_nsec,
                        std::int64_t{st.st_ctim.tv_sec} * kNano + st.st_ctim.tv_nsec};
}

bool VerifiedFiles::contains(const std::string& name, const FileIdentity& id) const {
    const auto it = files_.find(name);
    return it != files_.end() && it->second == id;
}

void VerifiedFiles::remember(const std::string& name, const FileIdentity& id) {
    files_[name] = id;
}

void VerifiedFiles::forget(const std::string& name) {
    files_.erase(name);
}

off_t lock_offset(std::string_view hex_name) {
    off_t offset = 0;
    for (const char c : hex_name.substr(0, kLockDigits)) {
        const int digit = c >= 'a' ? c - 'a' + 10 : c - '0';
        offset = offset * 16 + digit;
    }
    return offset;
}

void StoreLocks::open(const fs::path& lock_file, bool shared) {
    const proto::UniqueFd dir(::open(lock_file.parent_path().c_str(), kDirFlags));
    if (dir.get() < 0) {
        file_ = proto::UniqueFd(-1);
        off(lock_file, std::strerror(errno));
        return;
    }
    open(dir.get(), lock_file, shared);
}

void StoreLocks::open(int dir, const fs::path& shown, bool shared) {
    constexpr int kFlags = O_RDWR | O_NOFOLLOW | O_NONBLOCK | O_NOCTTY | O_CLOEXEC;
    const mode_t mode = shared ? 0660 : 0600;
    file_ = proto::UniqueFd(::openat(dir, ".lock", kFlags));
    bool made = false;
    if (file_.get() < 0 && errno == ENOENT) {
        file_ = proto::UniqueFd(::openat(dir, ".lock", kFlags | O_CREAT | O_EXCL, mode));
        made = file_.get() >= 0;
    }
    struct stat st {};
    if (file_.get() < 0 || ::fstat(file_.get(), &st) != 0) {
        const std::string why = std::strerror(errno);
        file_ = proto::UniqueFd(-1);
        off(shown, why);
        return;
    }
    // Another name of a file (a hard link) or no file at all: never locked, never chmod-ed.
    if (!S_ISREG(st.st_mode) || st.st_nlink != 1) {
        file_ = proto::UniqueFd(-1);
        off(shown, "it is not a regular file with one name");
        return;
    }
    // Made by us with the umask in between: the group needs to write it too.
    if ((made || st.st_uid == ::geteuid()) && (st.st_mode & 0777U) != mode)
        ::fchmod(file_.get(), mode);
    shown_ = shown.string();
}

void StoreLocks::off(const fs::path& shown, const std::string& why) {
    if (warned_) return;
    warned_ = true;
    spdlog::warn(
        "archive cache: cannot use {} ({}): archives in use are not protected from eviction by "
        "other daemons",
        shown.string(), why);
}

bool StoreLocks::share(std::string_view hex_name, std::shared_ptr<void>& lease) const {
    return lock(hex_name, F_RDLCK, lease);
}

bool StoreLocks::take(std::string_view hex_name, std::shared_ptr<void>& held) const {
    return lock(hex_name, F_WRLCK, held);
}

// Each lock has an open file description of its own: OFD locks of one
// description merge, and one holder's close would drop another's.
bool StoreLocks::lock(std::string_view hex_name, short type, std::shared_ptr<void>& held) const {
    held.reset();
    if (!enabled()) return true;
    // The checked file again, never another reached by its name.
    const std::string proc = "/proc/self/fd/" + std::to_string(file_.get());
    auto fd =
        std::make_shared<proto::UniqueFd>(::open(proc.c_str(), O_RDWR | O_NOCTTY | O_CLOEXEC));
    if (fd->get() < 0) {
        spdlog::debug("archive cache: cannot open {} again: {}", shown_, std::strerror(errno));
        return true;
    }
    struct flock range {};
    range.l_type = type;
    range.l_whence = SEEK_SET;
    range.l_start = lock_offset(hex_name);
    range.l_len = 1;
    if (::fcntl(fd->get(), F_OFD_SETLK, &range) != 0) {
        if (errno == EAGAIN || errno == EACCES) return false;
        spdlog::debug("archive cache: cannot lock {}: {}", shown_, std::strerror(errno));
        return true;
    }
    held = std::move(fd);
    return true;
}

}  // namespace hostkeeper::daemon::archives
