#pragma once
// The one line `hostkeeper migrate` writes into hostkeeperd's config.toml:
// `backend = "pass"` under [keyring], so that the next daemon keeps the
// backend the running one switched to. An edit of the user's text, not a
// rewrite: every other line and comment stays as it was.

#include <filesystem>
#include <string>
#include <string_view>

namespace hostkeeper::helper::cli {

// The file hostkeeperd reads without --config: $XDG_CONFIG_HOME/hostkeeper/
// config.toml, else ~/.config/hostkeeper/config.toml.
std::filesystem::path daemon_config_path();

// `text` (a config.toml) with keyring.backend set to `backend`, found by
// toml++ and edited in the text where toml++ saw it: an existing `backend`
// value of [keyring] (or a top-level `keyring.backend`) is replaced, keeping
// its line's indentation and comment; else the line is added at the top of
// the [keyring] table (or after the top-level `keyring.` keys); else a
// [keyring] table is appended. Every other byte stays as it was. Throws
// proto::FileError when `text` is not valid TOML, when keyring is no table
// (`[[keyring]]`), or when it is an inline table (`keyring = {...}`).
std::string with_keyring_backend(const std::string& text, std::string_view backend);

// Reads `path` (missing: empty), sets the backend, and replaces the file
// atomically with its mode kept (new: 0600), creating its directory.
// Throws proto::FileError.
void write_keyring_backend(const std::filesystem::path& path, std::string_view backend);

}  // namespace hostkeeper::helper::cli
