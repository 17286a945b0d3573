#include "daemon/pass/store_git.hpp"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstring>
#include <vector>

extern char** environ;  // NOLINT(readability-redundant-declaration)

namespace hostkeeper::daemon::pass {
namespace fs = std::filesystem;

namespace {

struct RunResult {
    int status = -1;  // exit status, -1 when it did not run or was killed
    std::string out;
};

// Runs git with `args` (after "git"), stdin from /dev/null, stderr dropped,
// stdout kept; killed after 20 s.
RunResult run_git(const fs::path& store, const std::vector<std::string>& args) {
    std::vector<std::string> env_text;
    for (char** e = environ; *e != nullptr; ++e) {
        const std::string_view entry(*e);
        const auto eq = entry.find('=');
        const std::string_view name = entry.substr(0, eq);
        if (name == "GIT_DIR" || name == "GIT_WORK_TREE" || name == "GIT_NAMESPACE" ||
            name == "GIT_INDEX_FILE" || name == "GIT_INDEX_VERSION" ||
            name == "GIT_OBJECT_DIRECTORY" || name == "GIT_COMMON_DIR" ||
            name == "GIT_CEILING_DIRECTORIES")
            continue;
        env_text.emplace_back(entry);
    }
    env_text.push_back("GIT_CEILING_DIRECTORIES=" + (store / "..").lexically_normal().string());
    env_text.emplace_back("GIT_TERMINAL_PROMPT=0");
    std::vector<char*> envp;
    for (std::string& e : env_text) envp.push_back(e.data());
    envp.push_back(nullptr);
    std::vector<std::string> argv_text{"git"};
    argv_text.insert(argv_text.end(), args.begin(), args.end());
    std::vector<char*> argv;
    for (std::string& a : argv_text) argv.push_back(a.data());
    argv.push_back(nullptr);

    RunResult result;
    int pipe_fds[2];
    if (::pipe2(pipe_fds, O_CLOEXEC) != 0) return result;
    posix_spawn_file_actions_t actions;
    posix_spawn_file_actions_init(&actions);
    posix_spawn_file_actions_addopen(&actions, 0, "/dev/null", O_RDONLY, 0);
    posix_spawn_file_actions_adddup2(&actions, pipe_fds[1], 1);
    posix_spawn_file_actions_addopen(&actions, 2, "/dev/null", O_WRONLY, 0);
    pid_t pid = -1;
    const int spawned = ::posix_spawnp(&pid, "git", &actions, nullptr, argv.data(), envp.data());
    posix_spawn_file_actions_destroy(&actions);
    ::close(pipe_fds[1]);
    if (spawned != 0) {
        ::close(pipe_fds[0]);
        return result;
    }
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(20);
    bool killed = false;
    char buffer[4096];
    while (true) {
        const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
            deadline - std::chrono::steady_clock::now());
        if (left.count() <= 0) {
            ::kill(pid, SIGKILL);
            killed = true;
            break;
        }
        pollfd p{pipe_fds[0], POLLIN, 0};
        const int ready = ::poll(&p, 1, static_cast<int>(left.count()));
        if (ready < 0 && errno == EINTR) continue;
        if (ready <= 0) continue;
        const ssize_t n = ::read(pipe_fds[0], buffer, sizeof buffer);
        if (n < 0 && errno == EINTR) continue;
        if (n <= 0) break;
        if (result.out.size() < 65536) result.out.append(buffer, static_cast<std::size_t>(n));
    }
    ::close(pipe_fds[0]);
    int status = 0;
    while (::waitpid(pid, &status, 0) < 0 && errno == EINTR) {
    }
    if (!killed && WIFEXITED(status)) result.status = WEXITSTATUS(status);
    return result;
}

std::string trimmed(std::string text) {
    while (!text.empty() && (text.back() == '\n' || text.back() == ' ')) text.pop_back();
    return text;
}

}  // namespace

std::optional<std::string> commit_change(const fs::path& store, const fs::path& file,
                                         const std::string& entry, bool removed) {
    // pass's set_git: the file's folder, or the nearest one that exists.
    fs::path dir = file.parent_path();
    std::error_code ec;
    while (!fs::is_directory(dir, ec) && dir.has_parent_path() && dir != store)
        dir = dir.parent_path();
    const std::string where = dir.string();
    const RunResult inside = run_git(store, {"-C", where, "rev-parse", "--is-inside-work-tree"});
    if (inside.status != 0 || trimmed(inside.out) != "true") return std::nullopt;

    const std::string path = file.string();
    if (removed) {
        const RunResult rm =
            run_git(store, {"-C", where, "rm", "-q", "--cached", "--ignore-unmatch", "--", path});
        if (rm.status != 0) return "git rm " + entry + " failed";
    } else {
        const RunResult add = run_git(store, {"-C", where, "add", "--", path});
        if (add.status != 0) return "git add " + entry + " failed";
        const RunResult status = run_git(store, {"-C", where, "status", "--porcelain", "--", path});
        if (status.status != 0) return "git status failed";
        if (trimmed(status.out).empty()) return std::nullopt;  // nothing changed
    }
    const RunResult sign =
        run_git(store, {"-C", where, "config", "--bool", "--get", "pass.signcommits"});
    std::vector<std::string> commit{"-C", where, "commit", "-q"};
    if (trimmed(sign.out) == "true") commit.emplace_back("-S");
    commit.emplace_back("-m");
    commit.push_back(removed ? "Remove " + entry + " from store."
                             : "Add given password for " + entry + " to store.");
    // Only this entry: changes the user staged meanwhile stay theirs.
    commit.emplace_back("--");
    commit.push_back(path);
    const RunResult committed = run_git(store, commit);
    if (committed.status != 0) return "git commit of " + entry + " failed";
    return std::nullopt;
}

}  // namespace hostkeeper::daemon::pass
