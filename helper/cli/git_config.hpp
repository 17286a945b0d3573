#pragma once
// hostkeeper's place in git's configuration. setup --git adds git-credential-hostkeeper to the
// user's global git configuration (`credential.helper = hostkeeper`, after any helper already
// there), through git itself, and records it for --undo, which removes exactly that value again;
// doctor's git check reads what git will use.

#include <optional>
#include <string>
#include <vector>

#include "helper/cli/doctor_sink.hpp"
#include "helper/cli/setup_plan.hpp"
#include "proto/json.hpp"

namespace hostkeeper::helper::cli {

// The program git runs for `credential.helper = hostkeeper`.
inline constexpr const char* kGitHelperProgram = "git-credential-hostkeeper";

// How git names hostkeeper's helper in credential.helper: "hostkeeper" when
// git-credential-hostkeeper is on PATH, else its absolute path next to the
// running hostkeeper; nullopt when neither exists.
std::optional<std::string> git_helper_value();

// True for a credential.helper value that runs hostkeeper's helper.
bool is_hostkeeper_git_helper(const std::string& value);

// The credential.helper values git reads (`git config SCOPE --get-all
// credential.helper`; SCOPE: {"--global"}, {"--file", PATH} or {} for what
// git uses here), in order; nullopt when git cannot be run or read them.
std::optional<std::vector<std::string>> git_credential_helpers(
    const std::vector<std::string>& scope);

// Adds the step (or a note, or a refusal) for --git to `plan`.
void plan_git(Plan& plan);

// Whether git asks hostkeeper's helper (skip when git is not installed or
// not set up; fail when it is configured but cannot be run; warn when
// other helpers come first).
void check_git(const DoctorSink& report);

// True for the record plan_git's step leaves in setup.json.
bool is_git_record(const proto::Json& action);
// Reverses one such record; what happened, for the user.
std::string undo_git(const proto::Json& action, bool dry_run);

}  // namespace hostkeeper::helper::cli
