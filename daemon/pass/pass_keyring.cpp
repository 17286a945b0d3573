#include "daemon/pass/pass_keyring.hpp"

#include <spdlog/spdlog.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstdlib>
#include <utility>

#include "daemon/pass/gpg_session.hpp"
#include "daemon/pass/store_git.hpp"
#include "daemon/pass/store_layout.hpp"
#include "proto/error.hpp"
#include "proto/file_io.hpp"

namespace hostkeeper::daemon::pass {
namespace fs = std::filesystem;
using proto::Error;
using proto::ErrorCode;
using proto::Secret;

namespace {

constexpr std::size_t kMaxEntryFile = std::size_t{1} << 20;
constexpr std::size_t kMaxIdFile = std::size_t{64} * 1024;

// pass's umask: $PASSWORD_STORE_UMASK (octal), else 077.
mode_t store_umask() {
    const char* text = std::getenv("PASSWORD_STORE_UMASK");
    if (text != nullptr && *text != '\0') {
        char* end = nullptr;
        const unsigned long value = std::strtoul(text, &end, 8);
        if (end != nullptr && *end == '\0' && value <= 0777) return static_cast<mode_t>(value);
    }
    return 077;
}

std::string getenv_or_empty(const char* name) {
    const char* value = std::getenv(name);
    return value != nullptr ? value : "";
}

[[noreturn]] void not_initialized(const fs::path& store) {
    throw Error(ErrorCode::keyring_unavailable,
                "the password store " + store.string() +
                    " is not initialized (no .gpg-id): run `pass init YOUR-GPG-KEY-ID`, or set "
                    "keyring.password_store_dir to your store");
}

}  // namespace

bool store_writable(const fs::path& store) {
    fs::path dir = store / kEntryFolder;
    std::error_code ec;
    // Nothing is written through a link there (store_layout.hpp).
    if (fs::is_symlink(fs::symlink_status(dir, ec))) return false;
    while (!fs::exists(dir, ec) && dir.has_parent_path() && dir.parent_path() != dir)
        dir = dir.parent_path();
    return ::access(dir.c_str(), W_OK | X_OK) == 0;
}

PassKeyring::PassKeyring(const std::optional<fs::path>& configured_store)
    : store_(resolve_store_dir(configured_store)),
      options_(parse_gpg_options(getenv_or_empty("PASSWORD_STORE_GPG_OPTS"))) {
    if (!options_.ignored.empty()) {
        std::string words;
        for (const std::string& w : options_.ignored) words += (words.empty() ? "" : " ") + w;
        spdlog::warn(
            "PASSWORD_STORE_GPG_OPTS: GPGME cannot pass on {}; put such options in gpg.conf",
            words);
    }
}

PassKeyring::~PassKeyring() = default;

GpgSession& PassKeyring::session() {
    if (!session_) session_ = std::make_unique<GpgSession>(options_);
    return *session_;
}

std::vector<std::string> PassKeyring::recipients_for(const fs::path& folder,
                                                     const std::string& entry) {
    const std::string key = getenv_or_empty("PASSWORD_STORE_KEY");
    if (!key.empty()) return parse_store_key(key);
    const std::optional<fs::path> id_file = gpg_id_file_for(store_, folder);
    if (!id_file) not_initialized(store_);
    std::optional<std::string> text;
    try {
        text = proto::read_file_if_exists(*id_file, kMaxIdFile);
    } catch (const proto::FileError& e) {
        throw Error(ErrorCode::keyring_error, e.what());
    }
    if (!text) not_initialized(store_);
    const std::string signing = getenv_or_empty("PASSWORD_STORE_SIGNING_KEY");
    if (!signing.empty()) {
        fs::path sig_path = *id_file;
        sig_path += ".sig";
        const std::optional<std::string> sig = proto::read_file_if_exists(sig_path, kMaxIdFile);
        if (!sig)
            throw Error(ErrorCode::keyring_error,
                        "PASSWORD_STORE_SIGNING_KEY is set and " + sig_path.string() +
                            " does not exist: pass would refuse to write " + entry + " too");
        std::vector<std::string> fingerprints;
        for (const std::string& f : parse_store_key(signing)) {
            if (f.size() == 40 && std::all_of(f.begin(), f.end(), [](char c) {
                    return (c >= '0' && c <= '9') || (c >= 'A' && c <= 'F');
                }))
                fingerprints.push_back(f);
        }
        if (!session().signed_by(*text, *sig, fingerprints))
            throw Error(ErrorCode::keyring_error,
                        "the signature " + sig_path.string() +
                            " is not valid for PASSWORD_STORE_SIGNING_KEY: pass would refuse to "
                            "write " +
                            entry + " too");
    }
    std::vector<std::string> ids = parse_gpg_ids(*text);
    if (ids.empty())
        throw Error(ErrorCode::keyring_error,
                    id_file->string() + " names no gpg id: run `pass init YOUR-GPG-KEY-ID`");
    return ids;
}

std::optional<Secret> PassKeyring::read_entry(const std::string& entry) {
    const auto [folder_name, file] = entry_location(entry);
    const StoreFolder folder = open_store_folder(store_, folder_name, std::nullopt, entry);
    const std::optional<std::string> ciphertext =
        read_entry_file(folder, file, entry, kMaxEntryFile);
    if (!ciphertext) {
        if (!is_initialized(store_)) not_initialized(store_);
        return std::nullopt;
    }
    Decrypted decrypted = session().decrypt(*ciphertext, entry);
    {
        const std::lock_guard lock(used_mutex_);
        used_keyids_.insert(decrypted.keyids.begin(), decrypted.keyids.end());
    }
    return std::move(decrypted.text);
}

void PassKeyring::write_entry(const std::string& entry, std::string_view text) {
    const auto [folder_name, file] = entry_location(entry);
    // Links are refused before anything is encrypted, and again when writing.
    check_entry_file(open_store_folder(store_, folder_name, std::nullopt, entry), file, entry);
    const std::vector<std::string> recipients = recipients_for(store_ / folder_name, entry);
    std::string line;
    line.reserve(text.size() + 1);  // no reallocation leaves a copy behind
    line.append(text);
    line += '\n';
    const Secret plaintext = Secret::adopt(line);
    const std::string ciphertext = session().encrypt(plaintext, recipients, entry);
    const mode_t mask = store_umask();
    const StoreFolder folder =
        open_store_folder(store_, folder_name, static_cast<mode_t>(0777 & ~mask), entry);
    ::fchmod(folder.fd.get(), static_cast<mode_t>(0777 & ~mask));
    write_entry_file(folder, file, entry, ciphertext, static_cast<mode_t>(0666 & ~mask));
    if (const auto problem = commit_change(store_, folder.path / file, entry, false))
        spdlog::warn("password store: {} (the entry is stored)", *problem);
}

bool PassKeyring::remove_entry(const std::string& entry) {
    const auto [folder_name, file] = entry_location(entry);
    const StoreFolder folder = open_store_folder(store_, folder_name, std::nullopt, entry);
    if (!remove_entry_file(folder, file, entry)) {
        if (!is_initialized(store_)) not_initialized(store_);
        return false;
    }
    if (const auto problem = commit_change(store_, folder.path / file, entry, true))
        spdlog::warn("password store: {} (the entry is removed)", *problem);
    // pass's `rmdir -p`: the folder goes with its last entry (not past the store).
    remove_folder_if_empty(folder);
    return true;
}

std::optional<credentials::StoredItem> PassKeyring::lookup(const credentials::ItemKey& key) {
    const std::string entry = entry_name(key.kind, key.key);
    const std::optional<Secret> text = read_entry(entry);
    if (!text) return std::nullopt;
    return entry_item(entry, key, text->view());
}

void PassKeyring::store(const credentials::StoredItem& item) {
    const Secret text = entry_text_of(item);
    write_entry(entry_name(item.key.kind, item.key.key), text.view());
}

bool PassKeyring::remove(const credentials::ItemKey& key) {
    return remove_entry(entry_name(key.kind, key.key));
}

std::vector<std::pair<std::string, credentials::WallTime>> PassKeyring::folder_files(
    const std::string& folder_name) {
    const StoreFolder folder = open_store_folder(store_, folder_name, std::nullopt);
    FolderListing listing = list_store_folder(folder);
    for (const std::string& link : listing.links) {
        if (link.size() > 4 && link.compare(link.size() - 4, 4, ".gpg") == 0)
            spdlog::warn(
                "password store: {} is a symbolic link, which hostkeeper does not follow: "
                "not listed",
                (folder.path / link).string());
    }
    return std::move(listing.files);
}

// A kind whose username is inside the encrypted entry has each entry read,
// and one whose key gpg-agent does not hold unlocked is listed without it.
std::vector<credentials::ListedItem> PassKeyring::list(credentials::ItemKind kind) {
    if (!open_store_folder(store_, kEntryFolder, std::nullopt).fd.valid() &&
        !is_initialized(store_))
        not_initialized(store_);
    std::vector<credentials::ListedItem> out;
    for (auto& [file, written] : folder_files(entry_folder(kind))) {
        if (auto key = key_of_entry_file(kind, file))
            out.push_back({*key, std::nullopt, entry_name(kind, *key), written});
    }
    std::sort(out.begin(), out.end(), [](const auto& a, const auto& b) { return a.key < b.key; });
    if (!credentials::describe(kind).pass.username_inside) return out;
    for (credentials::ListedItem& item : out) {
        try {
            if (auto found = lookup({kind, item.key})) item.username = std::move(found->username);
        } catch (const Error& e) {
            if (e.code() != ErrorCode::keyring_locked) throw;
        }
    }
    return out;
}

void PassKeyring::unlock() {
    throw Error(ErrorCode::keyring_locked,
                "hostkeeperd cannot ask for a gpg passphrase (it has no terminal, and no "
                "passphrase ever passes through it): run `hostkeeper unlock` in a terminal, which "
                "has gpg-agent ask you through pinentry");
}

std::vector<std::string> PassKeyring::used_keyids() const {
    const std::lock_guard lock(used_mutex_);
    return {used_keyids_.begin(), used_keyids_.end()};
}

void PassKeyring::forget_used_keys() {
    const std::lock_guard lock(used_mutex_);
    used_keyids_.clear();
}

}  // namespace hostkeeper::daemon::pass
