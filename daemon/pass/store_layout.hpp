#pragma once
// Where a `pass` password store keeps hostkeeper's entries, and which gpg
// ids an entry is encrypted to, as pass 1.7 decides both (read in
// /usr/bin/pass: PREFIX, set_gpg_recipients).
//
// The store is `keyring.password_store_dir`, else $PASSWORD_STORE_DIR, else
// ~/.password-store. Host H's entry is `hostkeeper/H` (the file
// hostkeeper/H.gpg); H:P, a host with a port, is `hostkeeper/H_P` (a
// normalized hostname never holds `_`, so the two cannot collide). An
// entry's recipients are $PASSWORD_STORE_KEY's ids when that is set, else
// the lines of the `.gpg-id` in the entry's folder or the nearest parent
// folder up to the store's root (`#` starts a comment).

#include <filesystem>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "proto/secret.hpp"

namespace hostkeeper::daemon::pass {

inline constexpr std::string_view kEntryFolder = "hostkeeper";

std::filesystem::path resolve_store_dir(const std::optional<std::filesystem::path>& configured);

// "hostkeeper/example.com", "hostkeeper/example.com_8443".
std::string entry_name(std::string_view host);
// The host an entry file under hostkeeper/ stands for ("example.com_8443.gpg"
// -> "example.com:8443"); nullopt for any other file name.
std::optional<std::string> host_of_entry_file(std::string_view file_name);

// Docker credentials' entries: "hostkeeper/docker/B64", B64 being the
// server URL in unpadded base64url (it may hold any character). Throws
// proto::Error{bad_request} when the file name would be over 255 bytes
// (NAME_MAX): a server URL of more than 188 bytes.
inline constexpr std::string_view kDockerFolder = "docker";
std::string docker_entry_name(std::string_view server);
// The server a file under hostkeeper/docker/ stands for; nullopt for any
// other file name.
std::optional<std::string> server_of_docker_entry_file(std::string_view file_name);

// The ids of a .gpg-id file's text, as pass reads them.
std::vector<std::string> parse_gpg_ids(std::string_view text);
// The ids of $PASSWORD_STORE_KEY (split on blanks), as pass reads them;
// also any other text's blank-separated words.
std::vector<std::string> parse_store_key(std::string_view text);

// The .gpg-id that governs entries in `folder` (inside `store`): the
// folder's own, else the nearest parent's; nullopt when the store has none.
std::optional<std::filesystem::path> gpg_id_file_for(const std::filesystem::path& store,
                                                     const std::filesystem::path& folder);

// The text an entry holds, as credentials text: trailing blanks and line
// ends dropped; anything that is not a JSON object keeps only its first
// line (pass's convention: the password first, notes after).
proto::Secret entry_text(std::string_view plaintext);

// Whether pass could store an entry under hostkeeper/: a .gpg-id governs it.
bool is_initialized(const std::filesystem::path& store);

}  // namespace hostkeeper::daemon::pass
