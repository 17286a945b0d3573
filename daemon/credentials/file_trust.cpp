#include "daemon/credentials/file_trust.hpp"

#include <sys/stat.h>
#include <unistd.h>

#include <array>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <deque>
#include <fstream>

namespace hostkeeper::daemon::credentials {
namespace fs = std::filesystem;

namespace {

// At most as many symbolic links as the kernel follows in one lookup.
constexpr int kMaxLinks = 40;

std::string owner_text(uid_t owner, const UidView& view) {
    std::string text = "is owned by uid " + std::to_string(owner);
    if (view.overflow && owner == *view.overflow)
        text +=
            " (the overflow uid: this user namespace does not map root, so its real owner "
            "cannot be told)";
    return text + ", not by you (uid " + std::to_string(view.me) + ")";
}

// Why `st` (of `path`, a directory when `dir`) may be changed by another
// user; "" when not. `root_ok`: root may own it.
std::string loose(const fs::path& path, const struct stat& st, bool dir, bool root_ok,
                  const UidView& view) {
    const bool owned =
        st.st_uid == view.me || (root_ok && view.root && st.st_uid == *view.root) ||
        (dir && view.overflow && st.st_uid == *view.overflow && overflow_may_own(path, view.home));
    if (!owned) return path.string() + " " + owner_text(st.st_uid, view);
    if (dir && (st.st_mode & S_ISVTX) != 0) return {};
    if ((st.st_mode & S_IWOTH) != 0)
        return path.string() + " is world-writable (chmod o-w " + path.string() + ")";
    if ((st.st_mode & S_IWGRP) != 0)
        return path.string() + " is group-writable (chmod g-w " + path.string() + ")";
    return {};
}

std::string cannot_check(const fs::path& path) {
    return path.string() + " cannot be checked (" + std::strerror(errno) + ")";
}

std::optional<uid_t> read_uid(const char* file) {
    std::ifstream in(file);
    unsigned long value = 0;
    if (!(in >> value)) return std::nullopt;
    return static_cast<uid_t>(value);
}

}  // namespace

UidView UidView::current() {
    UidView view;
    view.me = ::geteuid();
    view.root = 0;
    if (std::ifstream map("/proc/self/uid_map"); map) {
        // "inner outer count" lines: root is mapped when a line's outer range holds uid 0.
        view.root.reset();
        unsigned long inner = 0;
        unsigned long outer = 0;
        unsigned long count = 0;
        while (map >> inner >> outer >> count) {
            if (outer == 0 && count > 0) view.root = static_cast<uid_t>(inner);
        }
        if (!view.root) view.overflow = read_uid("/proc/sys/kernel/overflowuid").value_or(65534);
    }
    const char* home = std::getenv("HOME");
    std::error_code ec;
    if (home != nullptr && *home == '/') view.home = fs::weakly_canonical(home, ec);
    if (ec) view.home.clear();
    return view;
}

bool overflow_may_own(const fs::path& dir, const fs::path& home) {
    const fs::path normal = dir.lexically_normal();
    if (normal == normal.root_path() && normal.is_absolute()) return true;
    if (home.empty() || !home.is_absolute()) return false;
    // The home's parent and the directories above it.
    const fs::path above = home.lexically_normal().parent_path();
    if (normal.empty() || above.empty()) return false;
    auto d = normal.begin();
    auto a = above.begin();
    for (; d != normal.end(); ++d, ++a) {
        if (d->empty()) continue;  // a trailing separator
        if (a == above.end() || *d != *a) return false;
    }
    return true;
}

std::string untrusted_path(const fs::path& file, FileOwner owner, const UidView& view) {
    std::error_code ec;
    const fs::path absolute = fs::absolute(file, ec);
    if (ec) return file.string() + " cannot be checked (" + ec.message() + ")";
    // The names still to look up, as the kernel would: every directory a name
    // is looked up in, and every link followed, must be one no one else may change.
    std::deque<std::string> names;
    for (const fs::path& part : absolute.relative_path()) names.push_back(part.string());
    fs::path at = absolute.root_path();
    struct stat st {};
    if (::stat(at.c_str(), &st) != 0) return cannot_check(at);
    if (std::string why = loose(at, st, true, true, view); !why.empty()) return why;
    bool at_sticky = (st.st_mode & S_ISVTX) != 0;
    int links = 0;
    while (!names.empty()) {
        const std::string name = names.front();
        names.pop_front();
        if (name.empty() || name == ".") continue;
        if (name == "..") {
            at = at.parent_path();  // checked on the way down
            if (::stat(at.c_str(), &st) != 0) return cannot_check(at);
            at_sticky = (st.st_mode & S_ISVTX) != 0;
            continue;
        }
        const fs::path next = at / name;
        if (::lstat(next.c_str(), &st) != 0) return cannot_check(next);
        if (S_ISLNK(st.st_mode)) {
            // In a sticky directory the link's owner may replace it.
            if (at_sticky && st.st_uid != view.me && !(view.root && st.st_uid == *view.root))
                return next.string() + " " + owner_text(st.st_uid, view);
            if (++links > kMaxLinks) return next.string() + " has too many symbolic links";
            std::array<char, 4096> target{};
            const ssize_t n = ::readlink(next.c_str(), target.data(), target.size() - 1);
            if (n <= 0) return cannot_check(next);
            const fs::path to(std::string(target.data(), static_cast<std::size_t>(n)));
            std::deque<std::string> rest;
            for (const fs::path& part : to.relative_path()) rest.push_back(part.string());
            names.insert(names.begin(), rest.begin(), rest.end());
            if (to.is_absolute()) {
                at = to.root_path();
                if (::stat(at.c_str(), &st) != 0) return cannot_check(at);
                at_sticky = (st.st_mode & S_ISVTX) != 0;
            }
            continue;
        }
        const bool last = names.empty();
        const bool dir = !last || S_ISDIR(st.st_mode);
        const bool root_ok = dir || owner == FileOwner::you_or_root;
        if (std::string why = loose(next, st, dir, root_ok, view); !why.empty()) return why;
        at = next;
        at_sticky = (st.st_mode & S_ISVTX) != 0;
    }
    return {};
}

std::string writable_by_others(const fs::path& file) {
    std::string why = untrusted_path(file, FileOwner::you);
    if (why.empty()) return {};
    return why + ": another user could choose the programs hostkeeperd runs for token_command";
}

TrustedProgram find_trusted_program(std::string_view argv0, std::string_view search_path,
                                    const UidView& view) {
    TrustedProgram found;
    const auto trusted = [&](const fs::path& candidate) {
        struct stat st {};
        if (::stat(candidate.c_str(), &st) != 0) {
            found.refused = "cannot run " + candidate.string() + ": " + std::strerror(errno);
            return;
        }
        if (std::string why = untrusted_path(candidate, FileOwner::you_or_root, view);
            !why.empty()) {
            found.refused = candidate.string() + " is not trusted: " + why +
                            ": another user could replace the program";
            return;
        }
        found.path = candidate;
    };
    if (argv0.empty()) {
        found.refused = "the program's name is empty";
        return found;
    }
    if (argv0.find('/') != std::string_view::npos) {
        trusted(fs::path(argv0));
        return found;
    }
    while (true) {
        const auto colon = search_path.find(':');
        const fs::path dir(search_path.substr(0, colon));
        // Relative entries (an empty one is the working directory) are not searched.
        if (dir.is_absolute()) {
            const fs::path candidate = dir / argv0;
            std::error_code ec;
            if (fs::is_regular_file(candidate, ec) && ::access(candidate.c_str(), X_OK) == 0) {
                trusted(candidate);
                return found;
            }
        }
        if (colon == std::string_view::npos) break;
        search_path.remove_prefix(colon + 1);
    }
    found.refused = std::string(argv0) + " is not found in PATH (its absolute entries)";
    return found;
}

}  // namespace hostkeeper::daemon::credentials
