#include "daemon/archives/shared_store.hpp"

#include <fcntl.h>
#include <spdlog/spdlog.h>
#include <unistd.h>

#include <cerrno>
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

struct stat stat_dir(const fs::path& dir) {
    struct stat st {};
    if (::stat(dir.c_str(), &st) != 0)
        throw std::runtime_error("cannot read " + dir.string() + ": " + std::strerror(errno));
    if (!S_ISDIR(st.st_mode)) throw std::runtime_error(dir.string() + " is not a directory");
    return st;
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

StoreMode check_store_dir(const fs::path& dir, uid_t uid, bool (*in_group)(gid_t)) {
    if (in_group == nullptr) in_group = in_my_groups;
    const struct stat st = stat_dir(dir);
    if (st.st_uid == uid && (st.st_mode & 077U) == 0) return StoreMode::private_dir;
    if ((st.st_mode & S_IRWXG) == 0 && st.st_uid != uid) {
        throw std::runtime_error(dir.string() + " belongs to uid " + std::to_string(st.st_uid) +
                                 ", not to you, and is not shared with a group; " + kAccepted);
    }
    const std::string fault = shared_fault(st, in_group);
    if (!fault.empty()) {
        throw std::runtime_error(dir.string() + " has mode " + octal(st.st_mode) + ": " + fault +
                                 "; " + kAccepted);
    }
    return StoreMode::shared_dir;
}

void ensure_shared_subdir(const fs::path& sub, gid_t group) {
    if (::mkdir(sub.c_str(), 02770) == 0) {
        // mkdir's mode passes through the umask; the setgid parent gave the group.
        if (::chmod(sub.c_str(), 02770) != 0)
            throw std::runtime_error("cannot set the mode of " + sub.string() + ": " +
                                     std::strerror(errno));
    } else if (errno != EEXIST) {
        throw std::runtime_error("cannot create " + sub.string() + ": " + std::strerror(errno));
    }
    const struct stat st = stat_dir(sub);
    const std::string fault = shared_fault(st, in_my_groups);
    if (!fault.empty() || st.st_gid != group) {
        throw std::runtime_error(
            sub.string() + " has mode " + octal(st.st_mode) + " and group " +
            std::to_string(st.st_gid) + ": " +
            (fault.empty() ? "not the group of the directory above it" : fault) +
            "; a shared archive directory's subdirectories are 2770 with its group (a member "
            "whose umask or tools made it otherwise: chgrp GROUP DIR; chmod 2770 DIR)");
    }
}

void ensure_own_subdir(const fs::path& sub, uid_t uid) {
    if (::mkdir(sub.c_str(), 02750) == 0) {
        if (::chmod(sub.c_str(), 02750) != 0)
            throw std::runtime_error("cannot set the mode of " + sub.string() + ": " +
                                     std::strerror(errno));
    } else if (errno != EEXIST) {
        throw std::runtime_error("cannot create " + sub.string() + ": " + std::strerror(errno));
    }
    struct stat st {};
    if (::lstat(sub.c_str(), &st) != 0 || !S_ISDIR(st.st_mode) || st.st_uid != uid ||
        (st.st_mode & 022U) != 0) {
        throw std::runtime_error(sub.string() +
                                 " is not a directory of yours that only you can change "
                                 "(remove it; the daemon makes it again, 2750)");
    }
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
    const mode_t mode = shared ? 0660 : 0600;
    const proto::UniqueFd fd(
        ::open(lock_file.c_str(), O_RDWR | O_CREAT | O_CLOEXEC | O_NOFOLLOW, mode));
    struct stat st {};
    if (fd.get() < 0 || ::fstat(fd.get(), &st) != 0) {
        if (!warned_) {
            warned_ = true;
            spdlog::warn(
                "archive cache: cannot open {} ({}): archives in use are not protected "
                "from eviction by other daemons",
                lock_file.string(), std::strerror(errno));
        }
        path_.clear();
        return;
    }
    // Made by us with the umask in between: the group needs to write it too.
    if (st.st_uid == ::geteuid() && (st.st_mode & 0777U) != mode) ::fchmod(fd.get(), mode);
    path_ = lock_file.string();
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
    if (path_.empty()) return true;
    auto fd = std::make_shared<proto::UniqueFd>(::open(path_.c_str(), O_RDWR | O_CLOEXEC));
    if (fd->get() < 0) {
        spdlog::debug("archive cache: cannot open {}: {}", path_, std::strerror(errno));
        return true;
    }
    struct flock range {};
    range.l_type = type;
    range.l_whence = SEEK_SET;
    range.l_start = lock_offset(hex_name);
    range.l_len = 1;
    if (::fcntl(fd->get(), F_OFD_SETLK, &range) != 0) {
        if (errno == EAGAIN || errno == EACCES) return false;
        spdlog::debug("archive cache: cannot lock {}: {}", path_, std::strerror(errno));
        return true;
    }
    held = std::move(fd);
    return true;
}

}  // namespace hostkeeper::daemon::archives
