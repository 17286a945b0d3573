#pragma once
// The throw-away gnome-keyring-daemon of tests/support/keyring-env.sh, driven
// the way a person (Seahorse, secret-tool) or the session would: lock and
// unlock its "login" collection, edit items behind hostkeeperd's back, stop,
// kill and restart the daemon itself.

#include <sys/types.h>

#include <filesystem>
#include <string>

#include "harness.hpp"

namespace hostkeeper::it {

// The Secret Service's Lock method on the login collection, as Seahorse's lock button.
Result lock_login_collection();
// Unlocks the login collection with its throw-away password through the
// daemon's control socket, as PAM does at login (no prompt can be shown here).
bool unlock_login_collection();

// The keyring events hostkeeperd at `socket` has acted on (`status --json`:
// credentials.invalidations).
long long keyring_invalidations(const std::filesystem::path& socket);
// Gives hostkeeperd at `socket` up to 5 s to act on a keyring event after
// `before` (its credential cache follows the keyring's signals, which reach
// it after the call that caused them returned). Never asserts: what a test
// checks is the next answer, which must be right whether or not this waited.
void await_invalidation(const std::filesystem::path& socket, long long before);
// lock_login_collection(), then await_invalidation(): the lock as hostkeeperd
// at `socket` has seen it.
Result lock_login_collection_seen_by(const std::filesystem::path& socket);

// secret-tool store/clear with hostkeeperd's schema (xdg:schema
// io.hostkeeper.Credentials, attribute host), the secret on standard input.
Result secret_tool_store(const std::string& host, const std::string& secret);
Result secret_tool_clear(const std::string& host);

// The running keyring daemon: HK_KEYRING_PID at first, then whichever
// restart_keyring() started (stopped when the tests end).
pid_t keyring_pid();
// SIGTERM (or `signal`) to the keyring daemon, waits until it left the bus.
void kill_keyring(int signal);
// Starts a new keyring daemon as keyring-env.sh does (same data directory,
// password and login collection) and waits until it serves the default collection.
void start_keyring();
// Starts a new keyring daemon on the same data directory without its
// password: the login collection is loaded from disk and stays locked (as
// after autologin, or a keyring re-activated after a crash).
void start_keyring_locked();

}  // namespace hostkeeper::it
