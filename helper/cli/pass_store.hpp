#pragma once
// What the command line reads of a `pass` password store by itself (the
// daemon does the encrypting and decrypting): hostkeeper's entries, the
// .gpg-id files that name their recipients, PASSWORD_STORE_GPG_OPTS. The
// layout's rules are proto/pass_store_layout.hpp's, as the daemon's are.

#include <filesystem>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace hostkeeper::helper::cli {

// hostkeeper's entries in a store: every STORE/hostkeeper/**/*.gpg that is a
// regular file (hidden folders skipped), sorted, and apart from them the
// symbolic links among those names, which hostkeeper does not follow (the
// daemon refuses them): a link's target may be outside the store, or
// another host's entry. No link to a folder is followed either; when
// STORE/hostkeeper itself is a link, it is the one link and there are no files.
struct PassEntries {
    std::vector<std::filesystem::path> files;
    std::vector<std::filesystem::path> links;
};
PassEntries pass_entries(const std::filesystem::path& store);

// pass_entries(store).files: empty when there is no hostkeeper folder.
std::vector<std::filesystem::path> pass_entry_files(const std::filesystem::path& store);

// The host of an entry file: STORE/hostkeeper/H.gpg is H, H_P.gpg is H:P.
// nullopt for files in sub-folders and names that are no host entry (the
// daemon's rule: only the names it would write, normalized hosts).
std::optional<std::string> pass_entry_host(const std::filesystem::path& store,
                                           const std::filesystem::path& file);

// The .gpg-id files that name the recipients of hostkeeper's entries: the
// one that governs STORE/hostkeeper (its own, else the store root's), then
// each one in a folder below it. Sorted after the first.
std::vector<std::filesystem::path> pass_gpg_id_files(const std::filesystem::path& store);

// The key ids of a .gpg-id file, as pass reads them: one a line, `#`
// comments and surrounding blanks dropped. Throws proto::FileError.
std::vector<std::string> read_gpg_ids(const std::filesystem::path& file);

// PASSWORD_STORE_GPG_OPTS as pass uses it: split on blanks, no quoting.
std::vector<std::string> split_gpg_opts(std::string_view text);

// The value of --homedir in those options (`--homedir D` or `--homedir=D`).
std::optional<std::string> gpg_homedir_option(const std::vector<std::string>& options);

}  // namespace hostkeeper::helper::cli
