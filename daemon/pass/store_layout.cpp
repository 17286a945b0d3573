#include "daemon/pass/store_layout.hpp"

#include <dirent.h>
#include <fcntl.h>
#include <openssl/evp.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <cerrno>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <random>

#include "proto/error.hpp"
#include "proto/file_io.hpp"

namespace hostkeeper::daemon::pass {
namespace fs = std::filesystem;

namespace {

constexpr std::string_view kSuffix = proto::kPassEntrySuffix;
constexpr std::size_t kMaxFileName = 255;  // NAME_MAX of Linux file systems

}  // namespace

namespace {

// "hostkeeper/FOLDER/B64": OpenSSL's base64 of `key`, made URL- and
// file-safe (no '/') and unpadded; nullopt past NAME_MAX.
std::optional<std::string> encoded_entry_name(std::string_view folder, std::string_view key) {
    std::string encoded(4 * ((key.size() + 2) / 3) + 1, '\0');
    const int length = EVP_EncodeBlock(reinterpret_cast<unsigned char*>(encoded.data()),
                                       reinterpret_cast<const unsigned char*>(key.data()),
                                       static_cast<int>(key.size()));
    encoded.resize(static_cast<std::size_t>(length));
    while (!encoded.empty() && encoded.back() == '=') encoded.pop_back();
    std::replace(encoded.begin(), encoded.end(), '+', '-');
    std::replace(encoded.begin(), encoded.end(), '/', '_');
    if (encoded.size() + kSuffix.size() > kMaxFileName) return std::nullopt;
    return std::string(kEntryFolder) + "/" + std::string(folder) + "/" + encoded;
}

// The key an encoded entry's file name stands for; nullopt for any other
// name, and for a name encoded_entry_name() would not write for it.
std::optional<std::string> decoded_entry_file(std::string_view folder, std::string_view file_name) {
    if (file_name.size() <= kSuffix.size() ||
        file_name.substr(file_name.size() - kSuffix.size()) != kSuffix)
        return std::nullopt;
    const std::string_view stem = file_name.substr(0, file_name.size() - kSuffix.size());
    std::string text(stem);
    if (text.find_first_of("+/=") != std::string::npos) return std::nullopt;
    std::replace(text.begin(), text.end(), '-', '+');
    std::replace(text.begin(), text.end(), '_', '/');
    const std::size_t padding = (4 - text.size() % 4) % 4;
    if (padding == 3) return std::nullopt;
    text.append(padding, '=');
    std::string decoded(text.size() / 4 * 3 + 1, '\0');
    const int length = EVP_DecodeBlock(reinterpret_cast<unsigned char*>(decoded.data()),
                                       reinterpret_cast<const unsigned char*>(text.data()),
                                       static_cast<int>(text.size()));
    if (length < 0) return std::nullopt;
    // EVP_DecodeBlock counts the padding's bytes as zeros.
    decoded.resize(static_cast<std::size_t>(length) - padding);
    if (encoded_entry_name(folder, decoded) !=
        std::string(kEntryFolder) + "/" + std::string(folder) + "/" + std::string(stem))
        return std::nullopt;
    return decoded;
}

}  // namespace

std::string entry_folder(credentials::ItemKind kind) {
    const std::string_view folder = credentials::describe(kind).pass.folder;
    if (folder.empty()) return std::string(kEntryFolder);
    return std::string(kEntryFolder) + "/" + std::string(folder);
}

std::string entry_name(credentials::ItemKind kind, std::string_view key) {
    const credentials::PassEntries& entries = credentials::describe(kind).pass;
    if (!entries.encoded) return entry_name(key);
    std::optional<std::string> name = encoded_entry_name(entries.folder, key);
    if (!name) throw proto::Error(proto::ErrorCode::bad_request, entries.too_long);
    return std::move(*name);
}

std::optional<std::string> key_of_entry_file(credentials::ItemKind kind,
                                             std::string_view file_name) {
    const credentials::PassEntries& entries = credentials::describe(kind).pass;
    if (!entries.encoded) return host_of_entry_file(file_name);
    std::optional<std::string> decoded = decoded_entry_file(entries.folder, file_name);
    if (!decoded || !entries.writes_key(*decoded)) return std::nullopt;
    return decoded;
}

proto::Secret entry_text_of(const credentials::StoredItem& item) {
    return credentials::describe(item.key.kind).pass.text_of(item);
}

credentials::StoredItem entry_item(const std::string& entry, const credentials::ItemKey& key,
                                   std::string_view plaintext) {
    return credentials::describe(key.kind).pass.item_of(entry, key, entry_text(plaintext));
}

proto::Secret entry_text(std::string_view plaintext) {
    while (!plaintext.empty() && (plaintext.back() == '\n' || plaintext.back() == '\r' ||
                                  plaintext.back() == ' ' || plaintext.back() == '\t'))
        plaintext.remove_suffix(1);
    const auto first = plaintext.find_first_not_of(" \t\r\n");
    const bool object = first != std::string_view::npos && plaintext[first] == '{';
    if (!object) {
        const auto newline = plaintext.find('\n');
        plaintext = plaintext.substr(0, newline);
        while (!plaintext.empty() && plaintext.back() == '\r') plaintext.remove_suffix(1);
    }
    return proto::Secret(plaintext);
}

bool is_initialized(const fs::path& store) {
    return gpg_id_file_for(store, store / kEntryFolder).has_value();
}

StoreFd& StoreFd::operator=(StoreFd&& other) noexcept {
    if (this != &other) {
        if (fd_ >= 0) ::close(fd_);
        fd_ = std::exchange(other.fd_, -1);
    }
    return *this;
}

StoreFd::~StoreFd() {
    if (fd_ >= 0) ::close(fd_);
}

namespace {

using proto::Error;
using proto::ErrorCode;

[[noreturn]] void fail(const std::string& what) {
    throw Error(ErrorCode::keyring_error, what + ": " + std::strerror(errno));
}

// "hostkeeper/a.example: " before a message about what it needed, when named.
std::string for_entry(const std::string& entry) {
    return entry.empty() ? std::string() : entry + ": ";
}

[[noreturn]] void linked_folder(const fs::path& path, const std::string& entry) {
    throw Error(ErrorCode::keyring_error,
                for_entry(entry) + "the folder " + path.string() +
                    " is a symbolic link, which hostkeeper does not follow: make it a folder "
                    "of its own inside the password store");
}

[[noreturn]] void linked_entry(const fs::path& path, const std::string& entry) {
    throw Error(ErrorCode::keyring_error,
                "the entry " + entry + " (" + path.string() +
                    ") is a symbolic link, which hostkeeper does not follow: make it an entry of "
                    "its own (`pass rm " +
                    entry + "` removes the link, not what it points to)");
}

// lstat of `name` in `dir`; false (errno set) when it cannot be done.
bool stat_at(int dir, const std::string& name, struct stat& st) {
    return ::fstatat(dir, name.c_str(), &st, AT_SYMLINK_NOFOLLOW) == 0;
}

// Opens the folder `name` in `dir` without following a link; not valid()
// when there is none. Throws for a link, a file, or a failure.
StoreFd open_folder_at(int dir, const std::string& name, const fs::path& path,
                       const std::string& entry) {
    StoreFd fd(::openat(dir, name.c_str(), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC));
    if (fd.valid()) return fd;
    if (errno == ENOENT) return fd;
    if (errno == ENOTDIR || errno == ELOOP) {
        struct stat st {};
        if (stat_at(dir, name, st) && S_ISLNK(st.st_mode)) linked_folder(path, entry);
        throw Error(ErrorCode::keyring_error,
                    for_entry(entry) + path.string() + " is not a folder");
    }
    fail(for_entry(entry) + "cannot open " + path.string());
}

}  // namespace

StoreFolder open_store_folder(const fs::path& store, std::string_view folder,
                              std::optional<mode_t> create_mode, const std::string& entry) {
    StoreFolder out;
    out.path = store;
    // The store's own directory: a link there is the user's choice.
    out.fd = StoreFd(::open(store.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC));
    if (!out.fd.valid() && errno == ENOENT && create_mode) {
        std::error_code ec;
        fs::create_directories(store, ec);
        if (ec)
            throw Error(ErrorCode::keyring_error,
                        for_entry(entry) + "cannot create " + store.string() + ": " + ec.message());
        out.fd = StoreFd(::open(store.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC));
    }
    if (!out.fd.valid()) {
        if (errno == ENOENT) return out;
        fail(for_entry(entry) + "cannot open the password store " + store.string());
    }
    while (!folder.empty()) {
        const auto slash = folder.find('/');
        out.name = std::string(folder.substr(0, slash));
        folder = slash == std::string_view::npos ? std::string_view{} : folder.substr(slash + 1);
        out.path /= out.name;
        out.parent = std::move(out.fd);
        out.fd = open_folder_at(out.parent.get(), out.name, out.path, entry);
        if (!out.fd.valid() && create_mode) {
            if (::mkdirat(out.parent.get(), out.name.c_str(), *create_mode) != 0 && errno != EEXIST)
                fail(for_entry(entry) + "cannot create " + out.path.string());
            out.fd = open_folder_at(out.parent.get(), out.name, out.path, entry);
        }
        if (!out.fd.valid()) {
            // Made and removed meanwhile, or not there: nothing below it either.
            if (create_mode) fail(for_entry(entry) + "cannot open " + out.path.string());
            return out;
        }
    }
    return out;
}

std::pair<std::string, std::string> entry_location(std::string_view entry) {
    const auto slash = entry.rfind('/');
    if (slash == std::string_view::npos) return {std::string(), std::string(entry) + ".gpg"};
    return {std::string(entry.substr(0, slash)), std::string(entry.substr(slash + 1)) + ".gpg"};
}

std::optional<std::string> read_entry_file(const StoreFolder& folder, const std::string& file,
                                           const std::string& entry, std::size_t max_size) {
    if (!folder.fd.valid()) return std::nullopt;
    const fs::path path = folder.path / file;
    // O_NONBLOCK: a FIFO planted at the name does not block the open.
    const StoreFd fd(
        ::openat(folder.fd.get(), file.c_str(), O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC));
    if (!fd.valid()) {
        if (errno == ENOENT) return std::nullopt;
        if (errno == ELOOP) linked_entry(path, entry);
        fail("cannot read " + path.string());
    }
    struct stat st {};
    if (::fstat(fd.get(), &st) != 0) fail("cannot read " + path.string());
    if (!S_ISREG(st.st_mode))
        throw Error(ErrorCode::keyring_error,
                    "the entry " + entry + " (" + path.string() + ") is not a regular file");
    if (static_cast<std::size_t>(st.st_size) > max_size)
        throw Error(ErrorCode::keyring_error, path.string() + " is larger than " +
                                                  std::to_string(max_size) +
                                                  " bytes; not reading it");
    std::string bytes;
    bytes.reserve(static_cast<std::size_t>(st.st_size));
    std::array<char, 8192> buffer{};
    while (true) {
        const ssize_t n = ::read(fd.get(), buffer.data(), buffer.size());
        if (n < 0 && errno == EINTR) continue;
        if (n < 0) fail("cannot read " + path.string());
        if (n == 0) break;
        bytes.append(buffer.data(), static_cast<std::size_t>(n));
        if (bytes.size() > max_size)
            throw Error(ErrorCode::keyring_error, path.string() + " grew while being read");
    }
    return bytes;
}

void check_entry_file(const StoreFolder& folder, const std::string& file,
                      const std::string& entry) {
    if (!folder.fd.valid()) return;
    struct stat st {};
    if (!stat_at(folder.fd.get(), file, st)) {
        if (errno == ENOENT) return;
        fail("cannot read " + (folder.path / file).string());
    }
    if (S_ISLNK(st.st_mode)) linked_entry(folder.path / file, entry);
    if (!S_ISREG(st.st_mode))
        throw Error(ErrorCode::keyring_error, "the entry " + entry + " (" +
                                                  (folder.path / file).string() +
                                                  ") is not a regular file");
}

namespace {

// Writes all of `data` to `fd`; false (errno set) on failure.
bool write_all(int fd, std::string_view data) {
    while (!data.empty()) {
        const ssize_t n = ::write(fd, data.data(), data.size());
        if (n < 0 && errno == EINTR) continue;
        if (n <= 0) return false;
        data.remove_prefix(static_cast<std::size_t>(n));
    }
    return true;
}

// A new temporary file next to `file` in `dir` (mode 0600, made with
// O_EXCL: never an existing file or link); its name through `name`.
StoreFd make_temporary(int dir, const std::string& file, std::string& name) {
    static constexpr std::string_view kLetters =
        "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789";
    std::random_device random;
    std::uniform_int_distribution<std::size_t> pick(0, kLetters.size() - 1);
    for (int attempt = 0; attempt < 100; ++attempt) {
        name = "." + file + ".hostkeeper-";
        for (int i = 0; i < 10; ++i) name += kLetters[pick(random)];
        StoreFd fd(::openat(dir, name.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC,
                            0600));
        if (fd.valid() || errno != EEXIST) return fd;
    }
    errno = EEXIST;
    return StoreFd();
}

}  // namespace

void write_entry_file(const StoreFolder& folder, const std::string& file, const std::string& entry,
                      const std::string& content, mode_t mode) {
    const fs::path path = folder.path / file;
    check_entry_file(folder, file, entry);
    std::string temp;
    StoreFd fd = make_temporary(folder.fd.get(), file, temp);
    if (!fd.valid()) fail("cannot create a temporary file in " + folder.path.string());
    const auto discard = [&](const std::string& what) {
        const int saved = errno;
        ::unlinkat(folder.fd.get(), temp.c_str(), 0);
        errno = saved;
        fail(what);
    };
    const std::string temp_path = (folder.path / temp).string();
    if (!write_all(fd.get(), content)) discard("cannot write " + temp_path);
    if (::fchmod(fd.get(), mode) != 0) discard("cannot set the mode of " + temp_path);
    if (::fsync(fd.get()) != 0) discard("cannot write " + temp_path);
    if (::close(fd.release()) != 0) discard("cannot write " + temp_path);
    // A link put at the name since the check is replaced, not followed.
    if (::renameat(folder.fd.get(), temp.c_str(), folder.fd.get(), file.c_str()) != 0)
        discard("cannot replace " + path.string());
    ::fsync(folder.fd.get());
}

bool remove_entry_file(const StoreFolder& folder, const std::string& file,
                       const std::string& entry) {
    if (!folder.fd.valid()) return false;
    struct stat st {};
    if (!stat_at(folder.fd.get(), file, st)) {
        if (errno == ENOENT) return false;
        fail("cannot remove " + (folder.path / file).string());
    }
    if (S_ISLNK(st.st_mode)) linked_entry(folder.path / file, entry);
    // unlinkat never follows a link: one put at the name since goes, not its target.
    if (::unlinkat(folder.fd.get(), file.c_str(), 0) != 0) {
        if (errno == ENOENT) return false;
        fail("cannot remove " + (folder.path / file).string());
    }
    return true;
}

void remove_folder_if_empty(const StoreFolder& folder) {
    if (!folder.parent.valid() || folder.name.empty()) return;
    // Fails (ENOTEMPTY) while anything is left in it: nothing to do then.
    (void)::unlinkat(folder.parent.get(), folder.name.c_str(), AT_REMOVEDIR);
}

FolderListing list_store_folder(const StoreFolder& folder) {
    FolderListing out;
    if (!folder.fd.valid()) return out;
    // A descriptor of its own for the listing: closedir closes it.
    const int listed = ::openat(folder.fd.get(), ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (listed < 0) fail("cannot list " + folder.path.string());
    DIR* dir = ::fdopendir(listed);
    if (dir == nullptr) {
        const int saved = errno;
        ::close(listed);
        errno = saved;
        fail("cannot list " + folder.path.string());
    }
    while (true) {
        errno = 0;
        const dirent* item = ::readdir(dir);
        if (item == nullptr) break;
        const std::string name = item->d_name;
        if (name == "." || name == "..") continue;
        struct stat st {};
        if (!stat_at(folder.fd.get(), name, st)) continue;  // removed meanwhile
        if (S_ISLNK(st.st_mode)) {
            out.links.push_back(name);
        } else if (S_ISREG(st.st_mode)) {
            out.files.emplace_back(name,
                                   credentials::WallTime(std::chrono::seconds(st.st_mtim.tv_sec)));
        }
    }
    const int error = errno;
    ::closedir(dir);
    if (error != 0) {
        errno = error;
        fail("cannot list " + folder.path.string());
    }
    std::sort(out.files.begin(), out.files.end());
    std::sort(out.links.begin(), out.links.end());
    return out;
}

}  // namespace hostkeeper::daemon::pass
