#pragma once
// What makes an archive directory safe to share: which directories are
// accepted (private, or shared by a group), the identity of a file this
// daemon verified, and the byte-range locks that keep a served archive from
// being evicted by another daemon.
//
// Modes. A private directory is this user's own with no access for anyone
// else (0700), as the default one is. A shared directory is group-writable
// and setgid (its files and subdirectories take its group), not writable by
// others and not sticky (a group member removes an archive that did not
// verify, or the least recently used one), and its group is one of ours:
// mode 2770 or 2775. Anything else is refused, with the reason.
//
// Locks. DIR/.lock (0600 private, 0660 shared) holds one byte per archive
// (lock_offset of its name). A daemon serving an archive holds a shared
// open-file-description lock (F_OFD_SETLK) on its byte until the answer is
// written; an eviction takes the byte exclusively, without waiting, and
// skips the archive when it cannot. POSIX byte-range locks reach every NFS
// client (NFSv4, or NLM for v3); flock() does not.

#include <sys/stat.h>
#include <sys/types.h>

#include <cstdint>
#include <filesystem>
#include <map>
#include <memory>
#include <string>
#include <string_view>

#include "proto/unique_fd.hpp"

namespace hostkeeper::daemon::archives {

enum class StoreMode { private_dir, shared_dir };

// The existing directory `dir` opened (not through a symbolic link at its
// end), and its mode for the user `uid` in the groups `in_group` says. A
// shared directory belongs to root or to `uid`. Throws std::runtime_error
// naming what is wrong and what is accepted.
proto::UniqueFd open_store_dir(const std::filesystem::path& dir, uid_t uid, bool (*in_group)(gid_t),
                               StoreMode& mode);
StoreMode check_store_dir(const std::filesystem::path& dir, uid_t uid,
                          bool (*in_group)(gid_t) = nullptr);

// True when this process's effective or supplementary groups include `gid`.
bool in_my_groups(gid_t gid);

// The subdirectory `name` of the shared directory open as `top`, whose group
// is `group`, opened (not through a symbolic link): made group-writable and
// setgid (2770) when it is missing, then checked as the top is checked.
// `shown` names it in messages. Throws std::runtime_error.
proto::UniqueFd ensure_shared_subdir(int top, const std::string& name,
                                     const std::filesystem::path& shown, gid_t group);

// This user's own subdirectory `name` of the directory open as `parent`,
// opened (not through a symbolic link): made with `mode` when it is missing
// (2750 for modules: the group reads sizes; 2700 for temp files: theirs
// alone, and what is made there takes the group), then checked to be ours
// and writable by nobody else, and given `mode` and `group` (none: -1).
// Throws std::runtime_error.
proto::UniqueFd ensure_own_subdir(int parent, const std::string& name,
                                  const std::filesystem::path& shown, uid_t uid, mode_t mode,
                                  gid_t group = static_cast<gid_t>(-1));

// Makes way for a file to be renamed to `name` in the directory open as
// `dir` (`shown` in messages): anything there that is not a regular file (a
// directory a member made under an archive's name, a FIFO, a link) is
// removed when we may (an empty directory, in a directory that is not
// sticky), else renamed aside within the same directory as
// NAME.moved-aside.PID.N (never an archive's name, so never counted or
// served); logged either way. A regular file stays: rename(2) replaces it
// at once. False when something else is there still, with errno saying why
// it could not be moved aside (else why it could not be removed).
bool make_way(int dir, const std::string& name, const std::filesystem::path& shown);

// True for a rename's errno that says something stands at the new name
// that rename(2) does not replace (a directory: EISDIR, ENOTEMPTY, EEXIST).
bool in_the_way(int error);

// `from` in the directory open as `from_dir` renamed to `to` in `to_dir`
// (`shown` in messages), making way first (make_way) and again when a member
// put something in the way meanwhile, a few times at most: 0, or the errno
// of the last rename.
int rename_into_place(int from_dir, const std::string& from, int to_dir, const std::string& to,
                      const std::filesystem::path& shown);

// What stat says of a file, to know it again unchanged.
struct FileIdentity {
    dev_t dev = 0;
    ino_t ino = 0;
    off_t size = 0;
    std::int64_t mtime_ns = 0;
    std::int64_t ctime_ns = 0;
    bool operator==(const FileIdentity&) const = default;
};
FileIdentity identity_of(const struct stat& st);

// The files (by name under the store) this daemon hashed and found to match
// their name, as they were then: one hash per file unless it changes.
class VerifiedFiles {
  public:
    bool contains(const std::string& name, const FileIdentity& id) const;
    void remember(const std::string& name, const FileIdentity& id);
    void forget(const std::string& name);

  private:
    std::map<std::string, FileIdentity> files_;
};

// The byte of DIR/.lock that stands for the archive whose file name (64 hex
// digits) is `hex_name`: its first 15 hex digits.
off_t lock_offset(std::string_view hex_name);

class StoreLocks {
  public:
    // Opens DIR/.lock in the directory open as `dir` (`shown` in messages):
    // a regular file with one link, not through a symbolic link, created
    // (0660 when `shared`, else 0600) when missing. Locks are off when it
    // cannot be opened for writing or is no such file (said once, in the
    // log): leases are then empty and eviction removes files in use, which a
    // local reader survives through its open descriptor.
    void open(int dir, const std::filesystem::path& shown, bool shared);
    void open(const std::filesystem::path& lock_file, bool shared);
    bool enabled() const { return file_.get() >= 0; }

    // A shared lock on the archive's byte, held until the last copy of the
    // lease is dropped: false when an eviction holds it now (the archive is
    // on its way out); true with an empty lease when locks are off.
    bool share(std::string_view hex_name, std::shared_ptr<void>& lease) const;

    // The archive's byte taken exclusively, without waiting, held until
    // `held` is dropped: false when a daemon serves it; true with an empty
    // `held` when locks are off.
    bool take(std::string_view hex_name, std::shared_ptr<void>& held) const;

  private:
    bool lock(std::string_view hex_name, short type, std::shared_ptr<void>& held) const;
    void off(const std::filesystem::path& shown, const std::string& why);

    proto::UniqueFd file_{-1};  // DIR/.lock as checked; each lock reopens it
    std::string shown_;
    bool warned_ = false;  // that the lock file cannot be used
};

}  // namespace hostkeeper::daemon::archives
