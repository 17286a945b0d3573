#pragma once
// Where execvp would find a program: the first directory of a PATH value
// holding an executable regular file of that name. Shared by the helpers and
// the command line (the daemon to start, a tool's presence, git).

#include <filesystem>
#include <optional>
#include <string_view>

namespace hostkeeper::proto {

// `name` in the directories of `search_path` (a PATH value; an empty entry
// is the working directory, as execvp takes it). A name with a '/' is not
// searched: it is returned as it is when executable. With `absolute_only`,
// relative entries are skipped (for programs started on the user's behalf,
// where the working directory must not choose them).
std::optional<std::filesystem::path> find_program(std::string_view name,
                                                  std::string_view search_path,
                                                  bool absolute_only = false);

// find_program in $PATH, or "/usr/local/bin:/usr/bin:/bin" when PATH is
// unset (execvp's default without the working directory).
std::optional<std::filesystem::path> find_program_on_path(std::string_view name,
                                                          bool absolute_only = false);

}  // namespace hostkeeper::proto
