#pragma once
// Whether a configuration file may choose programs for hostkeeperd to run:
// only when no other user can write it, nor replace it in its directory.

#include <filesystem>
#include <string>

namespace hostkeeper::daemon::app {

// "" when `file` is owned by the daemon's user and writable by no one else,
// and every directory above it is owned by that user or root and writable
// by no one else (or sticky, as /tmp); else why not, with what to run about it.
// In a user namespace that does not map root (the packaged unit's
// PrivateUsers=), root's directories above HOME show as the overflow uid,
// which is accepted there.
std::string writable_by_others(const std::filesystem::path& file);

}  // namespace hostkeeper::daemon::app
