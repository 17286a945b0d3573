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
#include "proto/json.hpp"

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

// Each kind of item as pass keeps it: the folder of its entries, an
// entry's name for a key (and back), and the entry's text for an item (and
// back). The one place that knows the kinds.
struct EntryKind {
    std::string folder;
    std::string (*entry)(std::string_view key);
    std::optional<std::string> (*key_of_file)(std::string_view file_name);
    Secret (*text_of)(const credentials::StoredItem& item);
    credentials::StoredItem (*item_of)(const std::string& entry, const credentials::ItemKey& key,
                                       const Secret& text);
    bool username_inside;  // listing reads each entry for its username
};

Secret terraform_text(const credentials::StoredItem& item) {
    return item.secret.clone();
}

credentials::StoredItem terraform_item(const std::string& /*entry*/,
                                       const credentials::ItemKey& key, const Secret& text) {
    return {key, {}, entry_text(text.view())};
}

Secret docker_text(const credentials::StoredItem& item) {
    proto::Json json = {{"ServerURL", item.key.key},
                        {"Username", item.username},
                        {"Secret", std::string(item.secret.view())}};
    const proto::ScrubGuard json_guard(json);
    std::string text = json.dump();
    return Secret::adopt(text);
}

credentials::StoredItem docker_item(const std::string& entry, const credentials::ItemKey& key,
                                    const Secret& text) {
    credentials::DockerCredentials found = docker_entry_text(entry, entry_text(text.view()));
    if (found.server != key.key)
        throw Error(ErrorCode::keyring_error,
                    entry + " holds the credentials of another server (" + found.server + ")");
    return {key, std::move(found.username), std::move(found.secret)};
}

credentials::StoredItem git_item(const std::string& entry, const credentials::ItemKey& key,
                                 const Secret& text) {
    return git_entry_item(entry, key.key, entry_text(text.view()));
}

const EntryKind& entry_kind(credentials::ItemKind kind) {
    static const EntryKind terraform{std::string(kEntryFolder),
                                     entry_name,
                                     host_of_entry_file,
                                     terraform_text,
                                     terraform_item,
                                     false};
    static const EntryKind docker{std::string(kEntryFolder) + "/" + std::string(kDockerFolder),
                                  docker_entry_name,
                                  server_of_docker_entry_file,
                                  docker_text,
                                  docker_item,
                                  true};
    static const EntryKind git{std::string(kEntryFolder) + "/" + std::string(kGitFolder),
                               git_entry_name,
                               url_of_git_entry_file,
                               git_entry_text,
                               git_item,
                               false};
    switch (kind) {
        case credentials::ItemKind::terraform:
            return terraform;
        case credentials::ItemKind::docker:
            return docker;
        case credentials::ItemKind::git:
            return git;
    }
    throw Error(ErrorCode::keyring_error, "an item of an unknown kind");
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
    const EntryKind& kind = entry_kind(key.kind);
    const std::string entry = kind.entry(key.key);
    const std::optional<Secret> text = read_entry(entry);
    if (!text) return std::nullopt;
    return kind.item_of(entry, key, *text);
}

void PassKeyring::store(const credentials::StoredItem& item) {
    const EntryKind& kind = entry_kind(item.key.kind);
    const Secret text = kind.text_of(item);
    write_entry(kind.entry(item.key.key), text.view());
}

bool PassKeyring::remove(const credentials::ItemKey& key) {
    return remove_entry(entry_kind(key.kind).entry(key.key));
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
std::vector<credentials::ListedItem> PassKeyring::list(credentials::ItemKind item_kind) {
    const EntryKind& kind = entry_kind(item_kind);
    if (!open_store_folder(store_, kEntryFolder, std::nullopt).fd.valid() &&
        !is_initialized(store_))
        not_initialized(store_);
    std::vector<credentials::ListedItem> out;
    for (auto& [file, written] : folder_files(kind.folder)) {
        if (auto key = kind.key_of_file(file))
            out.push_back({*key, std::nullopt, kind.entry(*key), written});
    }
    std::sort(out.begin(), out.end(), [](const auto& a, const auto& b) { return a.key < b.key; });
    if (!kind.username_inside) return out;
    for (credentials::ListedItem& item : out) {
        try {
            if (auto found = lookup({item_kind, item.key}))
                item.username = std::move(found->username);
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
