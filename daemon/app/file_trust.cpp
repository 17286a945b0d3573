#include "daemon/app/file_trust.hpp"

#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <optional>

namespace hostkeeper::daemon::app {
namespace fs = std::filesystem;

namespace {

// The uid that owners outside a user namespace's map show as inside it
// (/proc/sys/kernel/overflowuid), when hostkeeperd runs in one that does not
// map root (hostkeeperd.service's PrivateUsers=): there the directories root
// owns above HOME look like this uid's. nullopt elsewhere.
std::optional<uid_t> unmapped_owner() {
    std::ifstream map("/proc/self/uid_map");
    if (!map) return std::nullopt;
    unsigned long inner = 0;
    unsigned long outer = 0;
    unsigned long count = 0;
    while (map >> inner >> outer >> count) {
        if (inner == 0) return std::nullopt;  // root is root here
    }
    uid_t overflow = 65534;
    std::ifstream("/proc/sys/kernel/overflowuid") >> overflow;
    return overflow;
}

// Whether `dir` is `home` or below it.
bool within(const fs::path& dir, const fs::path& home) {
    if (home.empty()) return false;
    auto d = dir.begin();
    for (auto h = home.begin(); h != home.end(); ++h, ++d) {
        if (h->empty()) continue;  // a trailing separator
        if (d == dir.end() || *d != *h) return false;
    }
    return true;
}

// Why `path` may be changed by another user; "" when not. `dir`: a
// directory on the way to the file, which root (or `also`) may own and which
// may be writable by others when sticky (as /tmp: no one may rename what is
// not theirs).
std::string loose(const fs::path& path, bool dir, std::optional<uid_t> also = std::nullopt) {
    struct stat st {};
    if (::stat(path.c_str(), &st) != 0)
        return path.string() + " cannot be checked (" + std::strerror(errno) + ")";
    const uid_t me = ::geteuid();
    if (st.st_uid != me && !(dir && (st.st_uid == 0 || (also && st.st_uid == *also))))
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
    const char* home_env = std::getenv("HOME");
    const fs::path home =
        home_env != nullptr && *home_env == '/' ? fs::weakly_canonical(home_env, ec) : fs::path();
    const std::optional<uid_t> unmapped = unmapped_owner();
    // The file, then every directory up to the root: another user who may
    // rename any of them may put another file in its place.
    std::string why = loose(checked, false);
    for (fs::path dir = checked.parent_path(); why.empty() && !dir.empty();
         dir = dir.parent_path()) {
        why = loose(dir, true, within(dir, home) ? std::nullopt : unmapped);
        if (dir == dir.root_path()) break;
    }
    if (why.empty()) return {};
    return why + ": another user could choose the programs hostkeeperd runs for token_command";
}

}  // namespace hostkeeper::daemon::app
