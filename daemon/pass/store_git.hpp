#pragma once
// A git commit per change, when the entry's folder is inside a git work
// tree whose top is in the store, as pass's git_add_file / git_commit do:
// GIT_* variables that would point git elsewhere are dropped,
// GIT_CEILING_DIRECTORIES is the store's parent, commits are signed (-S)
// when `git config pass.signcommits` is true, and the messages are pass's.
// Each git run is bounded (20 s). A failed commit does not undo the change;
// it is returned as a message for the log.

#include <filesystem>
#include <optional>
#include <string>

namespace hostkeeper::daemon::pass {

// After `file` was written: git add + commit "Add given password for ENTRY to store.".
// After it was removed: git rm + commit "Remove ENTRY from store.".
// nullopt when committed or when there is no git work tree; else why not.
std::optional<std::string> commit_change(const std::filesystem::path& store,
                                         const std::filesystem::path& file,
                                         const std::string& entry, bool removed);

}  // namespace hostkeeper::daemon::pass
