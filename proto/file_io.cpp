#include "proto/file_io.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <vector>

#include "proto/unique_fd.hpp"

namespace hostkeeper::proto {
namespace fs = std::filesystem;

namespace {

std::string errno_text(const std::string& what) {
    return what + ": " + std::strerror(errno);
}

using Fd = proto::UniqueFd;

fs::path resolve_target(const fs::path& path) {
    std::error_code ec;
    if (fs::is_symlink(fs::symlink_status(path, ec))) {
        fs::path real = fs::weakly_canonical(path, ec);
        if (!ec) return real;
    }
    return path;
}

}  // namespace

std::optional<std::string> read_file_if_exists(const fs::path& path, std::size_t max_size) {
    Fd fd(::open(path.c_str(), O_RDONLY | O_CLOEXEC));
    if (fd.get() < 0) {
        if (errno == ENOENT) return std::nullopt;
        throw FileError(errno_text("cannot read " + path.string()));
    }
    struct stat st {};
    if (::fstat(fd.get(), &st) != 0) throw FileError(errno_text("cannot read " + path.string()));
    if (!S_ISREG(st.st_mode)) throw FileError(path.string() + " is not a regular file");
    if (static_cast<std::size_t>(st.st_size) > max_size) {
        throw FileError(path.string() + " is larger than " + std::to_string(max_size) +
                        " bytes; not reading it");
    }
    std::string text;
    text.reserve(static_cast<std::size_t>(st.st_size));
    char buffer[8192];
    while (true) {
        const ssize_t n = ::read(fd.get(), buffer, sizeof buffer);
        if (n < 0 && errno == EINTR) continue;
        if (n < 0) throw FileError(errno_text("cannot read " + path.string()));
        if (n == 0) break;
        text.append(buffer, static_cast<std::size_t>(n));
        if (text.size() > max_size) throw FileError(path.string() + " grew while being read");
    }
    ::explicit_bzero(buffer, sizeof buffer);
    return text;
}

namespace {

// Writes all of `data` to `fd`; false (errno set) on failure.
bool write_all(int fd, const char* data, std::size_t size) {
    std::size_t done = 0;
    while (done < size) {
        const ssize_t n = ::write(fd, data + done, size - done);
        if (n < 0 && errno == EINTR) continue;
        if (n <= 0) return false;
        done += static_cast<std::size_t>(n);
    }
    return true;
}

// A temporary file next to `path` (mode 0600 from the start) that `fill`
// writes with `contents` (returning false, errno set, on failure), then
// `mode`, fsync and a rename over the target.
void replace_atomically(const fs::path& path, mode_t mode, const std::function<bool(int)>& fill,
                        const std::string& contents, bool through_link) {
    const fs::path target = through_link ? resolve_target(path) : path;
    // Built with append: g++ 12 -O3 warns falsely (-Wrestrict) about "." + std::string.
    std::string name(".");
    name.append(target.filename().string()).append(".hostkeeper-XXXXXX");
    std::string temp = (target.parent_path() / name).string();
    Fd fd(::mkostemp(temp.data(), O_CLOEXEC));  // mode 0600 from the start
    if (fd.get() < 0)
        throw FileError(errno_text("cannot create a temporary file next to " + target.string()));
    const auto fail = [&](const std::string& what) {
        const std::string message = errno_text(what);
        ::unlink(temp.c_str());
        throw FileError(message);
    };
    if (!fill(fd.get())) fail("cannot write " + temp + " (" + contents + ")");
    if (::fchmod(fd.get(), mode) != 0) fail("cannot set the mode of " + temp);
    if (::fsync(fd.get()) != 0) fail("cannot write " + temp);
    if (::close(fd.release()) != 0) fail("cannot write " + temp);
    if (::rename(temp.c_str(), target.c_str()) != 0) fail("cannot replace " + target.string());
    Fd dir(::open(target.parent_path().c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC));
    if (dir.get() >= 0) ::fsync(dir.get());
}

}  // namespace

void write_file_atomically(const fs::path& path, const std::string& content, mode_t mode) {
    replace_atomically(
        path, mode, [&](int fd) { return write_all(fd, content.data(), content.size()); },
        "the new contents", true);
}

void copy_file_atomically(const fs::path& from, const fs::path& to, mode_t mode) {
    Fd source(::open(from.c_str(), O_RDONLY | O_CLOEXEC));
    if (source.get() < 0) throw FileError(errno_text("cannot open " + from.string()));
    replace_atomically(
        to, mode,
        [&](int fd) {
            std::vector<char> buffer(std::size_t{1} << 20);
            for (;;) {
                const ssize_t n = ::read(source.get(), buffer.data(), buffer.size());
                if (n < 0 && errno == EINTR) continue;
                if (n < 0) return false;
                if (n == 0) return true;
                if (!write_all(fd, buffer.data(), static_cast<std::size_t>(n))) return false;
            }
        },
        "a copy of " + from.string(), false);
}

mode_t mode_or(const fs::path& path, mode_t fallback) {
    struct stat st {};
    if (::stat(path.c_str(), &st) != 0) return fallback;
    return st.st_mode & 07777;
}

std::filesystem::path xdg_base_dir(const char* variable, const char* below_home) {
    if (const char* xdg = std::getenv(variable); xdg != nullptr && xdg[0] == '/')
        return std::filesystem::path(xdg);
    const char* home = std::getenv("HOME");
    return std::filesystem::path(home != nullptr && home[0] != '\0' ? home : "/") / below_home;
}

void remove_file(const fs::path& path) {
    if (::unlink(path.c_str()) != 0 && errno != ENOENT)
        throw FileError(errno_text("cannot remove " + path.string()));
}

}  // namespace hostkeeper::proto
