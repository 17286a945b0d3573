#include "daemon/app/file_trust.hpp"

#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

namespace hostkeeper::daemon::app {
namespace fs = std::filesystem;

namespace {

// Why `path` may be changed by another user; "" when not. `dir`: a
// directory on the way to the file, which root may own and which may be
// writable by others when sticky (as /tmp: no one may rename what is not theirs).
std::string loose(const fs::path& path, bool dir) {
    struct stat st {};
    if (::stat(path.c_str(), &st) != 0)
        return path.string() + " cannot be checked (" + std::strerror(errno) + ")";
    const uid_t me = ::geteuid();
    if (st.st_uid != me && !(dir && st.st_uid == 0))
        return path.string() + " is owned by uid " + std::to_string(st.st_uid) +
               ", not by you (uid " + std::to_string(me) + ")";
    if (dir && (st.st_mode & S_ISVTX) != 0) return {};
    if ((st.st_mode & S_IWOTH) != 0)
        return path.string() + " is world-writable (chmod o-w " + path.string() + ")";
    if ((st.st_mode & S_IWGRP) != 0)
        return path.string() + " is group-writable (chmod g-w " + path.string() + ")";
    return {};
}

}  // namespace

std::string writable_by_others(const fs::path& file) {
    std::error_code ec;
    const fs::path resolved = fs::weakly_canonical(fs::absolute(file, ec), ec);
    const fs::path& checked = ec ? file : resolved;
    // The file, then every directory up to the root: another user who may
    // rename any of them may put another file in its place.
    std::string why = loose(checked, false);
    for (fs::path dir = checked.parent_path(); why.empty() && !dir.empty();
         dir = dir.parent_path()) {
        why = loose(dir, true);
        if (dir == dir.root_path()) break;
    }
    if (why.empty()) return {};
    return why + ": another user could choose the programs hostkeeperd runs for token_command";
}

}  // namespace hostkeeper::daemon::app
