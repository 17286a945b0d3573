#pragma once
// Where a `pass` password store keeps hostkeeper's entries and which gpg
// ids govern them, as pass 1.7 decides both (read in /usr/bin/pass: PREFIX,
// set_gpg_recipients): shared by hostkeeperd, which reads and writes the
// entries, and the command line, which checks and unlocks the store.
//
// The store is `keyring.password_store_dir`, else $PASSWORD_STORE_DIR, else
// ~/.password-store. Host H's entry is `hostkeeper/H` (the file
// hostkeeper/H.gpg); H:P, a host with a port, is `hostkeeper/H_P` (a
// normalized hostname never holds `_`, so the two cannot collide); the
// daemon's other kinds of items (Docker credentials, git items) are in
// folders of their own under hostkeeper/. An entry's recipients
// are $PASSWORD_STORE_KEY's ids when that is set, else the lines of the
// `.gpg-id` in the entry's folder or the nearest parent folder up to the
// store's root (`#` starts a comment).

#include <filesystem>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace hostkeeper::proto {

inline constexpr std::string_view kPassEntryFolder = "hostkeeper";
inline constexpr std::string_view kPassEntrySuffix = ".gpg";

// The store: `configured` when set, else $PASSWORD_STORE_DIR, else
// ~/.password-store; absolute.
std::filesystem::path pass_store_dir(const std::optional<std::filesystem::path>& configured);

// "hostkeeper/example.com", "hostkeeper/example.com_8443".
std::string pass_entry_name(std::string_view host);

// The host an entry file under hostkeeper/ stands for ("example.com_8443.gpg"
// -> "example.com:8443"); nullopt for any other file name, and for names
// hostkeeper would not write (not the normalized form of a host).
std::optional<std::string> host_of_pass_entry_file(std::string_view file_name);

// The ids of a .gpg-id file's text, as pass reads them: one a line, `#`
// comments and surrounding blanks dropped.
std::vector<std::string> parse_gpg_ids(std::string_view text);

// Blank-separated words, as pass splits $PASSWORD_STORE_KEY and
// $PASSWORD_STORE_GPG_OPTS (no quoting).
std::vector<std::string> split_pass_words(std::string_view text);

// The .gpg-id that governs entries in `folder` (inside `store`): the
// folder's own, else the nearest parent's up to the store's root; nullopt
// when there is none.
std::optional<std::filesystem::path> gpg_id_file_for(const std::filesystem::path& store,
                                                     const std::filesystem::path& folder);

}  // namespace hostkeeper::proto
