#include "helper/cli/git_config.hpp"

#include <algorithm>
#include <cctype>
#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <stdexcept>
#include <string_view>

#include "helper/client/subprocess.hpp"
#include "proto/program_search.hpp"

namespace hostkeeper::helper::cli {
namespace fs = std::filesystem;
using proto::Json;

namespace {

constexpr std::string_view kRecord = "git_credential_helper";
constexpr auto kGitLimit = std::chrono::seconds(10);

std::optional<fs::path> on_path(std::string_view program) {
    return proto::find_program_on_path(program);
}

client::Captured git(const std::vector<std::string>& args) {
    std::vector<std::string> argv{"git"};
    argv.insert(argv.end(), args.begin(), args.end());
    return client::run_captured(argv, kGitLimit, true);
}

std::vector<std::string> lines_of(const std::string& text) {
    std::vector<std::string> lines;
    std::size_t start = 0;
    while (start < text.size()) {
        const auto end = text.find('\n', start);
        lines.push_back(text.substr(start, end - start));
        if (end == std::string::npos) break;
        start = end + 1;
    }
    return lines;
}

std::string first_line(const std::string& text) {
    const auto lines = lines_of(text);
    return lines.empty() ? std::string("no output") : lines.front();
}

// The file `git config --global` wrote `value` to (GIT_CONFIG_GLOBAL,
// ~/.gitconfig or the XDG file, as git chooses); empty when git cannot say.
std::string global_file_of(const std::string& value) {
    const client::Captured result =
        git({"config", "--global", "--show-origin", "--get-all", "credential.helper"});
    if (result.status != 0) return {};
    for (const auto& line : lines_of(result.out)) {
        const auto tab = line.find('\t');
        if (tab == std::string::npos || line.compare(0, 5, "file:") != 0) continue;
        if (line.substr(tab + 1) == value) return line.substr(5, tab - 5);
    }
    return {};
}

// git runs a helper value that starts with a slash through the shell: only
// a path the shell takes as one plain word is written.
bool shell_safe(const std::string& path) {
    return std::all_of(path.begin(), path.end(), [](unsigned char c) {
        return std::isalnum(c) != 0 || c == '/' || c == '.' || c == '_' || c == '-' || c == '+';
    });
}

}  // namespace

std::optional<std::string> git_helper_value() {
    if (on_path(kGitHelperProgram)) return std::string("hostkeeper");
    std::error_code ec;
    const fs::path self = fs::read_symlink("/proc/self/exe", ec);
    if (ec) return std::nullopt;
    const auto sibling = proto::find_program((self.parent_path() / kGitHelperProgram).string(), "");
    if (!sibling) return std::nullopt;
    return sibling->string();
}

bool is_hostkeeper_git_helper(const std::string& value) {
    if (value == "hostkeeper") return true;
    // An absolute path runs as it is; git passes the action after it.
    const std::string program = value.substr(0, value.find(' '));
    return !program.empty() && program.front() == '/' &&
           fs::path(program).filename() == kGitHelperProgram;
}

std::optional<std::vector<std::string>> git_credential_helpers(
    const std::vector<std::string>& scope) {
    std::vector<std::string> args{"config"};
    args.insert(args.end(), scope.begin(), scope.end());
    args.insert(args.end(), {"--get-all", "credential.helper"});
    const client::Captured result = git(args);
    if (result.status == 1) return std::vector<std::string>{};  // not set
    if (result.status != 0) return std::nullopt;
    return lines_of(result.out);
}

void plan_git(Plan& plan) {
    if (!on_path("git")) {
        plan.refusals.push_back(
            "git: not found on PATH; install git, then run hostkeeper "
            "setup --git again");
        return;
    }
    const auto helpers = git_credential_helpers({"--global"});
    if (!helpers) {
        plan.refusals.push_back(
            "git: 'git config --global --get-all credential.helper' failed; "
            "fix the global git configuration, then run hostkeeper setup "
            "--git again");
        return;
    }
    for (const auto& value : *helpers) {
        if (is_hostkeeper_git_helper(value)) {
            plan.notes.push_back("git: credential.helper " + value + " is already configured");
            return;
        }
    }
    const auto value = git_helper_value();
    if (!value) {
        plan.refusals.push_back(std::string("git: ") + kGitHelperProgram +
                                " is neither on PATH nor next to hostkeeper; install it, then "
                                "run hostkeeper setup --git again");
        return;
    }
    if (*value != "hostkeeper" && !shell_safe(*value)) {
        plan.refusals.push_back(std::string("git: ") + kGitHelperProgram + " is at " + *value +
                                ", a path git's shell would not take as one word; put it on "
                                "PATH, then run hostkeeper setup --git again");
        return;
    }
    for (const auto& other : *helpers) {
        plan.notes.push_back("git: asks credential.helper " + other +
                             " first; hostkeeper answers what it does not");
    }
    const std::string what = "credential.helper " + *value + " to the global git configuration";
    plan.steps.push_back(
        {"git: would add " + what, "git: added " + what, [value = *value] {
             const client::Captured result =
                 git({"config", "--global", "--add", "credential.helper", value});
             if (result.status != 0) {
                 throw std::runtime_error("git config --global --add credential.helper failed: " +
                                          first_line(result.out));
             }
             return Json{{"action", kRecord}, {"value", value}, {"file", global_file_of(value)}};
         }});
}

void check_git(const DoctorSink& report) {
    if (!on_path("git")) {
        report.skip("git: not installed");
        return;
    }
    const auto helpers = git_credential_helpers({});
    if (!helpers) {
        report.warn(
            "git: 'git config --get-all credential.helper' failed; cannot tell whether "
            "git asks hostkeeper");
        return;
    }
    // git's list: an empty value drops every helper before it.
    std::vector<std::string> list;
    for (const auto& value : *helpers) {
        if (value.empty()) {
            list.clear();
        } else {
            list.push_back(value);
        }
    }
    std::vector<std::string> before;
    for (const auto& value : list) {
        if (!is_hostkeeper_git_helper(value)) {
            before.push_back(value);
            continue;
        }
        const bool runnable =
            value == "hostkeeper"
                ? on_path(kGitHelperProgram).has_value()
                : proto::find_program(value.substr(0, value.find(' ')), "").has_value();
        if (!runnable) {
            report.fail("git: credential.helper " + value + " is configured, but " +
                            kGitHelperProgram + " cannot be run",
                        "install hostkeeper's package, or run hostkeeper setup --git --undo and "
                        "hostkeeper setup --git again");
            return;
        }
        report.ok("git: credential.helper " + value + " is configured");
        for (const auto& other : before) {
            report.warn("git: asks credential.helper " + other +
                        " first; what it answers wins over the keyring");
        }
        return;
    }
    report.skip(
        "git: does not ask hostkeeper (hostkeeper setup --git lets git use the stored "
        "tokens for https)");
}

bool is_git_record(const Json& action) {
    return action.is_object() && action.value("action", "") == kRecord;
}

std::string undo_git(const Json& action, bool dry_run) {
    const std::string value = action.value("value", "");
    // The file setup wrote, whatever GIT_CONFIG_GLOBAL says now.
    const std::string file = action.value("file", "");
    const std::vector<std::string> scope = file.empty() ? std::vector<std::string>{"--global"}
                                                        : std::vector<std::string>{"--file", file};
    const std::string where = file.empty() ? "the global git configuration" : file;
    std::error_code ec;
    if (!file.empty() && !fs::exists(file, ec))
        return "left git alone: " + file + " is no longer there";
    const auto helpers = git_credential_helpers(scope);
    // A configuration git cannot read keeps the record: the value may be there.
    if (!helpers)
        throw std::runtime_error("git cannot read " + where + "; fix it and run --undo again");
    if (value.empty() || std::find(helpers->begin(), helpers->end(), value) == helpers->end())
        return "left " + where + " alone: credential.helper " + value + " is no longer there";
    if (!dry_run) {
        std::vector<std::string> args{"config"};
        args.insert(args.end(), scope.begin(), scope.end());
        args.insert(args.end(), {"--fixed-value", "--unset-all", "credential.helper", value});
        const client::Captured result = git(args);
        if (result.status != 0) {
            throw std::runtime_error("git config --unset-all credential.helper failed: " +
                                     first_line(result.out));
        }
    }
    return std::string(dry_run ? "would remove" : "removed") + " credential.helper " + value +
           " from " + where;
}

}  // namespace hostkeeper::helper::cli
