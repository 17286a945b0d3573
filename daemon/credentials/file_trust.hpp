#pragma once
// Whether another user could change what a path names: config.toml (which
// chooses the programs hostkeeperd runs) and a token command's program. A
// path is trusted when the file, every directory the kernel looks a name up
// in on the way to it and every symbolic link it follows there are owned by
// the daemon's user or root and writable by no one else (a directory may be
// writable by others when it is sticky, as /tmp: no one may rename what is
// not theirs there). Bare program names are searched in PATH's trusted
// entries only.

#include <sys/types.h>

#include <filesystem>
#include <optional>
#include <string>
#include <string_view>

namespace hostkeeper::daemon::credentials {

// How uids look from the daemon's user namespace.
struct UidView {
    uid_t me = 0;
    std::optional<uid_t> root;      // the uid root's files show as; nullopt: root is unmapped
    std::optional<uid_t> overflow;  // where root is unmapped: the uid every unmapped owner shows as
    std::filesystem::path home;     // $HOME, resolved; may be empty

    // From /proc/self/uid_map, /proc/sys/kernel/overflowuid, geteuid() and $HOME.
    static UidView current();
};

// Where root is unmapped (a user namespace such as the packaged unit's
// PrivateUsers=), root's files and every other user's show as the overflow
// uid: it is accepted only for the directories that are root's above a home
// on any system: `/` and the directories from there to the home's parent
// (for HOME=/home/me: `/` and `/home`). Not for the home itself, nor for any
// file.
bool overflow_may_own(const std::filesystem::path& dir, const std::filesystem::path& home);

// Who may own the file itself (its directories: you or root, always).
enum class FileOwner { you, you_or_root };

// "" when no other user can change `file` or what its path leads to; else
// which file or directory they could change and why, with what to run about it.
std::string untrusted_path(const std::filesystem::path& file, FileOwner owner,
                           const UidView& view = UidView::current());

// untrusted_path for config.toml (yours), with what it means: "" when
// trusted, else the reason and that another user could choose the programs
// hostkeeperd runs for token_command.
std::string writable_by_others(const std::filesystem::path& file);

// A token command's program: the file, when argv0 has a '/' (a relative one
// from the working directory), or the first executable of that name in the
// absolute entries of `search_path` (a PATH value). Refused, with why, when
// that file is not trusted (untrusted_path, yours or root's) or not found.
struct TrustedProgram {
    std::optional<std::filesystem::path> path;
    std::string refused;  // not empty when `path` is empty
};
TrustedProgram find_trusted_program(std::string_view argv0, std::string_view search_path,
                                    const UidView& view = UidView::current());

}  // namespace hostkeeper::daemon::credentials
