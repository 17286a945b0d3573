#pragma once
// Reading and rewriting the user's files (CLI configuration,
// credentials.tfrc.json, setup's state) without ever leaving a half-written one.

#include <sys/types.h>

#include <cstddef>
#include <filesystem>
#include <optional>
#include <stdexcept>
#include <string>

namespace hostkeeper::proto {

class FileError : public std::runtime_error {
  public:
    using std::runtime_error::runtime_error;
};

// The file's contents, or nullopt when it does not exist. Throws FileError
// when it cannot be read or is larger than `max_size`.
std::optional<std::string> read_file_if_exists(const std::filesystem::path& path,
                                               std::size_t max_size = 1 << 20);

// Replaces `path` with `content`: a temporary file in the same directory,
// written with `mode`, fsync'ed, then renamed over the target (through a
// symlink, the link's target is replaced, so dotfile managers keep their link).
// The directory must exist. Throws FileError.
void write_file_atomically(const std::filesystem::path& path, const std::string& content,
                           mode_t mode);

// Replaces `to` with a copy of the file `from`, the same way (streamed: any
// size), except that a symlink at `to` is replaced, not followed: a link
// planted in a shared directory cannot redirect the write.
void copy_file_atomically(const std::filesystem::path& from, const std::filesystem::path& to,
                          mode_t mode);

// The permission bits of an existing file, else `fallback`.
mode_t mode_or(const std::filesystem::path& path, mode_t fallback);

// An XDG base directory: $`variable` when it is an absolute path, else
// $HOME/`below_home` ("/" for a missing or empty HOME), e.g. ("XDG_CACHE_HOME", ".cache").
std::filesystem::path xdg_base_dir(const char* variable, const char* below_home);

// Removes `path`, following nothing; throws FileError on failure other than ENOENT.
void remove_file(const std::filesystem::path& path);

}  // namespace hostkeeper::proto
