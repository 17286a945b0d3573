#pragma once
// A `pass` password store as hostkeeperd reads and writes it: the layout
// (where the store is, entry names, which .gpg-id governs an entry) is
// proto/pass_store_layout.hpp's, shared with the command line; here are
// each kind's entries (named and read as the kind's description says), an
// entry's text, and the entries as files opened without following links.

#include <sys/types.h>

#include <cstddef>
#include <filesystem>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "daemon/credentials/keyring.hpp"
#include "proto/pass_store_layout.hpp"
#include "proto/secret.hpp"

namespace hostkeeper::daemon::pass {

inline constexpr std::string_view kEntryFolder = proto::kPassEntryFolder;

// The layout's rules, proto's (pass_store_layout.hpp).
inline std::filesystem::path resolve_store_dir(
    const std::optional<std::filesystem::path>& configured) {
    return proto::pass_store_dir(configured);
}
inline std::string entry_name(std::string_view host) {
    return proto::pass_entry_name(host);
}
inline std::optional<std::string> host_of_entry_file(std::string_view file_name) {
    return proto::host_of_pass_entry_file(file_name);
}

// The folder of a kind's entries, "hostkeeper" or "hostkeeper/FOLDER"
// (the kind's description: credentials/item_kinds.hpp).
std::string entry_folder(credentials::ItemKind kind);
// The entry of a kind's key: a host's as entry_name() names it; else
// "hostkeeper/FOLDER/B64", B64 being the key in unpadded base64url (it may
// hold any character). Throws proto::Error{bad_request} when that file name
// would be over 255 bytes (NAME_MAX): a key of more than 188 bytes.
std::string entry_name(credentials::ItemKind kind, std::string_view key);
// The key a file in the kind's folder stands for; nullopt for any other
// file name, and for a key hostkeeper does not write.
std::optional<std::string> key_of_entry_file(credentials::ItemKind kind,
                                             std::string_view file_name);
// An entry's text for an item, and the item of an entry's decrypted text
// (entry_text() first); throws proto::Error{keyring_error} naming `entry`
// for a text that is not the kind's, or holds another key's item.
proto::Secret entry_text_of(const credentials::StoredItem& item);
credentials::StoredItem entry_item(const std::string& entry, const credentials::ItemKey& key,
                                   std::string_view plaintext);

using proto::gpg_id_file_for;
using proto::parse_gpg_ids;
// The ids of $PASSWORD_STORE_KEY (split on blanks), as pass reads them;
// also any other text's blank-separated words.
inline std::vector<std::string> parse_store_key(std::string_view text) {
    return proto::split_pass_words(text);
}

// The text an entry holds, as credentials text: trailing blanks and line
// ends dropped; anything that is not a JSON object keeps only its first
// line (pass's convention: the password first, notes after).
proto::Secret entry_text(std::string_view plaintext);

// Whether pass could store an entry under hostkeeper/: a .gpg-id governs it.
bool is_initialized(const std::filesystem::path& store);

// Entries as files. An entry is a regular file in real folders of the
// store: no symbolic link is followed to it, neither the entry's own file
// nor hostkeeper/ or a kind's folder in it (a store synced with git may carry
// links; one could make a request for one host read another host's entry,
// or a write land outside the store). Each folder is opened relative to the
// one above it (openat, O_NOFOLLOW), so that no component of the path can
// be swapped for a link between a check and its use. The store's own
// directory may be a link: the user named it. A link is refused with
// proto::Error{keyring_error} naming it and saying that hostkeeper does not
// follow it; other failures are keyring_error too.

// An open file descriptor, closed when dropped.
class StoreFd {
  public:
    StoreFd() = default;
    explicit StoreFd(int fd) : fd_(fd) {}
    StoreFd(StoreFd&& other) noexcept : fd_(std::exchange(other.fd_, -1)) {}
    StoreFd& operator=(StoreFd&& other) noexcept;
    StoreFd(const StoreFd&) = delete;
    StoreFd& operator=(const StoreFd&) = delete;
    ~StoreFd();
    int get() const { return fd_; }
    bool valid() const { return fd_ >= 0; }
    // The descriptor, no longer closed by this object.
    int release() { return std::exchange(fd_, -1); }

  private:
    int fd_ = -1;
};

// One of the store's folders ("hostkeeper", "hostkeeper/docker"), opened.
struct StoreFolder {
    std::filesystem::path path;  // STORE/hostkeeper/docker, for messages
    std::string name;            // its name in `parent`: "docker"
    StoreFd parent;              // the folder above it: the store's directory for hostkeeper/
    StoreFd fd;                  // the folder; not valid() when it does not exist
};

// Opens `folder` (relative to `store`, components separated by '/') one
// component at a time. A folder that does not exist is made with
// `create_mode` when one is given (and the store's directory with it), else
// the result's fd is not valid(), as when the store does not exist. `entry`,
// when not empty, is named in messages as what needed the folder.
StoreFolder open_store_folder(const std::filesystem::path& store, std::string_view folder,
                              std::optional<mode_t> create_mode, const std::string& entry = {});

// Where an entry's file is: "hostkeeper/docker/B64" -> {"hostkeeper/docker", "B64.gpg"}.
std::pair<std::string, std::string> entry_location(std::string_view entry);

// The bytes of the entry's `file` in `folder` (not more than `max_size`),
// nullopt when there is no such file (nor the folder).
std::optional<std::string> read_entry_file(const StoreFolder& folder, const std::string& file,
                                           const std::string& entry, std::size_t max_size);

// Refuses the entry's `file` when it is a link (or anything but a regular
// file); nothing when it does not exist.
void check_entry_file(const StoreFolder& folder, const std::string& file, const std::string& entry);

// Replaces the entry's `file` (in a folder that exists) with `content`: a
// temporary file made with O_EXCL in the same folder, written, given
// `mode`, fsync'ed and renamed to `file` (a rename replaces what is at the
// name itself, never a link's target). A link at `file` is refused.
void write_entry_file(const StoreFolder& folder, const std::string& file, const std::string& entry,
                      const std::string& content, mode_t mode);

// Removes the entry's `file`; false when there is none. A link is refused
// (and stays).
bool remove_entry_file(const StoreFolder& folder, const std::string& file,
                       const std::string& entry);

// Removes the folder when it is empty (pass removes an entry's folder with
// its last entry); nothing otherwise.
void remove_folder_if_empty(const StoreFolder& folder);

// A folder's files: the regular files with the time each was last written,
// and the names of its symbolic links; each sorted by name.
struct FolderListing {
    std::vector<std::pair<std::string, credentials::WallTime>> files;
    std::vector<std::string> links;
};
FolderListing list_store_folder(const StoreFolder& folder);

}  // namespace hostkeeper::daemon::pass
