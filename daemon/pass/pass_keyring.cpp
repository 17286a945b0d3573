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

}  // namespace

bool store_writable(const fs::path& store) {
    fs::path dir = store / kEntryFolder;
    std::error_code ec;
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

fs::path PassKeyring::entry_file(const std::string& host) const {
    return store_ / (entry_name(host) + ".gpg");
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

std::optional<Secret> PassKeyring::read_entry(const std::string& entry, const fs::path& file) {
    std::error_code ec;
    const bool present = fs::exists(file, ec);
    if (ec && ec != std::errc::no_such_file_or_directory)
        throw Error(ErrorCode::keyring_error, "cannot read " + file.string() + ": " + ec.message());
    if (!present) {
        if (!is_initialized(store_)) not_initialized(store_);
        return std::nullopt;
    }
    std::optional<std::string> ciphertext;
    try {
        ciphertext = proto::read_file_if_exists(file, kMaxEntryFile);
    } catch (const proto::FileError& e) {
        throw Error(ErrorCode::keyring_error, e.what());
    }
    if (!ciphertext) return std::nullopt;  // removed meanwhile
    Decrypted decrypted = session().decrypt(*ciphertext, entry);
    {
        const std::lock_guard lock(used_mutex_);
        used_keyids_.insert(decrypted.keyids.begin(), decrypted.keyids.end());
    }
    return std::move(decrypted.text);
}

void PassKeyring::write_entry(const std::string& entry, const fs::path& file,
                              std::string_view text) {
    const fs::path folder = file.parent_path();
    const std::vector<std::string> recipients = recipients_for(folder, entry);
    std::string line;
    line.reserve(text.size() + 1);  // no reallocation leaves a copy behind
    line.append(text);
    line += '\n';
    const Secret plaintext = Secret::adopt(line);
    const std::string ciphertext = session().encrypt(plaintext, recipients, entry);
    const mode_t mask = store_umask();
    std::error_code ec;
    fs::create_directories(folder, ec);
    if (ec)
        throw Error(ErrorCode::keyring_error,
                    "cannot create " + folder.string() + ": " + ec.message());
    ::chmod(folder.c_str(), static_cast<mode_t>(0777 & ~mask));
    try {
        proto::write_file_atomically(file, ciphertext, static_cast<mode_t>(0666 & ~mask));
    } catch (const proto::FileError& e) {
        throw Error(ErrorCode::keyring_error, std::string("storing ") + entry + ": " + e.what());
    }
    if (const auto problem = commit_change(store_, file, entry, false))
        spdlog::warn("password store: {} (the entry is stored)", *problem);
}

bool PassKeyring::remove_entry(const std::string& entry, const fs::path& file) {
    std::error_code ec;
    if (!fs::exists(fs::symlink_status(file, ec))) {
        if (!is_initialized(store_)) not_initialized(store_);
        return false;
    }
    try {
        proto::remove_file(file);
    } catch (const proto::FileError& e) {
        throw Error(ErrorCode::keyring_error, std::string("removing ") + entry + ": " + e.what());
    }
    if (const auto problem = commit_change(store_, file, entry, true))
        spdlog::warn("password store: {} (the entry is removed)", *problem);
    // pass's `rmdir -p`: the folder goes with its last entry (not past the store).
    ::rmdir(file.parent_path().c_str());
    return true;
}

std::optional<Secret> PassKeyring::lookup(const std::string& host) {
    std::optional<Secret> text = read_entry(entry_name(host), entry_file(host));
    if (!text) return std::nullopt;
    return entry_text(text->view());
}

void PassKeyring::store(const std::string& host, const Secret& credentials) {
    write_entry(entry_name(host), entry_file(host), credentials.view());
}

bool PassKeyring::remove(const std::string& host) {
    return remove_entry(entry_name(host), entry_file(host));
}

namespace {

std::optional<credentials::WallTime> modified_time(const fs::path& file) {
    struct stat st {};
    if (::stat(file.c_str(), &st) != 0) return std::nullopt;
    return credentials::WallTime(std::chrono::seconds(st.st_mtim.tv_sec));
}

// The regular files of `folder` that `name_of` maps to a key, with the key.
template <typename NameOf>
std::vector<std::pair<std::string, fs::path>> entry_files(const fs::path& folder, NameOf name_of) {
    std::vector<std::pair<std::string, fs::path>> out;
    std::error_code ec;
    if (!fs::is_directory(folder, ec)) return out;
    for (fs::directory_iterator it(folder, ec), end; !ec && it != end; it.increment(ec)) {
        if (!it->is_regular_file(ec)) continue;
        if (auto key = name_of(it->path().filename().string()))
            out.emplace_back(std::move(*key), it->path());
    }
    if (ec)
        throw Error(ErrorCode::keyring_error,
                    "cannot list " + folder.string() + ": " + ec.message());
    std::sort(out.begin(), out.end());
    return out;
}

// What a Docker entry holds: {"ServerURL":...,"Username":...,"Secret":...}.
credentials::DockerCredentials docker_of_text(const std::string& entry, const Secret& text) {
    proto::Json json;
    try {
        json = proto::parse_json(text.view());
    } catch (const std::exception&) {
        throw Error(ErrorCode::keyring_error, entry + " does not hold a JSON object");
    }
    const proto::ScrubGuard guard(json);
    const auto field = [&](const char* name) -> const proto::Json& {
        const auto it = json.find(name);
        if (!json.is_object() || it == json.end() || !it->is_string())
            throw Error(ErrorCode::keyring_error,
                        entry + " has no string \"" + name + "\": not a Docker credential");
        return *it;
    };
    return {field("ServerURL").get<std::string>(), field("Username").get<std::string>(),
            Secret(field("Secret").get_ref<const std::string&>())};
}

}  // namespace

std::vector<credentials::ItemInfo> PassKeyring::items() {
    const fs::path folder = store_ / kEntryFolder;
    std::error_code ec;
    if (!fs::is_directory(folder, ec) && !is_initialized(store_)) not_initialized(store_);
    std::vector<credentials::ItemInfo> out;
    for (auto& [host, file] : entry_files(folder, host_of_entry_file))
        out.push_back({host, entry_name(host), modified_time(file)});
    return out;
}

std::vector<std::string> PassKeyring::hosts() {
    std::vector<std::string> out;
    for (credentials::ItemInfo& item : items()) out.push_back(std::move(item.host));
    return out;
}

fs::path PassKeyring::docker_file(const std::string& server) const {
    return store_ / (docker_entry_name(server) + ".gpg");
}

std::optional<credentials::DockerCredentials> PassKeyring::docker_lookup(
    const std::string& server) {
    const std::string entry = docker_entry_name(server);
    const std::optional<Secret> text = read_entry(entry, docker_file(server));
    if (!text) return std::nullopt;
    credentials::DockerCredentials found = docker_of_text(entry, entry_text(text->view()));
    if (found.server != server)
        throw Error(ErrorCode::keyring_error,
                    entry + " holds the credentials of another server (" + found.server + ")");
    return found;
}

void PassKeyring::docker_store(const credentials::DockerCredentials& credentials) {
    proto::Json json = {{"ServerURL", credentials.server},
                        {"Username", credentials.username},
                        {"Secret", std::string(credentials.secret.view())}};
    const proto::ScrubGuard json_guard(json);
    std::string text = json.dump();
    const Secret secret = Secret::adopt(text);
    write_entry(docker_entry_name(credentials.server), docker_file(credentials.server),
                secret.view());
}

bool PassKeyring::docker_remove(const std::string& server) {
    return remove_entry(docker_entry_name(server), docker_file(server));
}

// The username is inside the encrypted entry: each is read, and one whose
// key gpg-agent does not hold unlocked is listed without it.
std::vector<credentials::DockerItemInfo> PassKeyring::docker_items() {
    std::error_code ec;
    if (!fs::is_directory(store_ / kEntryFolder, ec) && !is_initialized(store_))
        not_initialized(store_);
    std::vector<credentials::DockerItemInfo> out;
    const fs::path folder = store_ / kEntryFolder / kDockerFolder;
    for (auto& [server, file] : entry_files(folder, server_of_docker_entry_file)) {
        credentials::DockerItemInfo info{server, std::nullopt, docker_entry_name(server),
                                         modified_time(file)};
        try {
            if (auto found = docker_lookup(server)) info.username = std::move(found->username);
        } catch (const Error& e) {
            if (e.code() != ErrorCode::keyring_locked) throw;
        }
        out.push_back(std::move(info));
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
