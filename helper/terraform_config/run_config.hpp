#pragma once
// The CLI configuration of one `hostkeeper exec --registry-cache` run: the
// user's own configuration (every file Terraform would read, in its order,
// so credentials_helper, provider_installation, plugin_cache_dir and
// credentials all hold) followed by the run's host blocks, which name the
// run's own port. The user's own host blocks win: hosts they name get no
// block from the run. The generated file is what TF_CLI_CONFIG_FILE names for
// the run; Terraform then reads nothing else.
//
// Tokens are not written to the generated file: a credentials block with a
// token is left out of it (a comment stands in its place) and its token is
// handed to COMMAND as the host's TF_TOKEN_* variable, which Terraform and
// OpenTofu read before credentials blocks. A *.tfrc.json file in the
// configuration directory that holds only "credentials" (the file `terraform
// login` writes) is read the same way; any other JSON file is refused.

#include <filesystem>
#include <map>
#include <string>
#include <string_view>
#include <vector>

#include "helper/terraform_config/cli_config.hpp"
#include "helper/terraform_config/tool_locations.hpp"
#include "proto/secret.hpp"

namespace hostkeeper::helper::terraform_config {

struct RunConfig {
    std::string user_text;                // the user's files, each introduced by a comment
    std::vector<std::string> kept_hosts;  // hosts with a user's own host block (normalized)
    // The hosts the run routes: the public registries, the hosts of the
    // environment's TF_TOKEN_* variables and of the user's credentials blocks.
    std::vector<std::string> hosts;
    std::vector<std::filesystem::path> files;  // the files read
    // The tokens of the user's credentials blocks, by normalized host, as
    // Terraform merges them (a later file's block wins).
    std::map<std::string, proto::Secret> tokens;
};

// The user's configuration for `paths` (Terraform's or OpenTofu's), and the
// hosts to route; `environment`: the names of COMMAND's variables.
// Files hostkeeperd writes (they start with kTfrcHeader) are left out: the
// run's blocks stand for them. Throws CliConfigError naming the file (and
// the line) for a file that does not scan, or for a *.tfrc.json file in the
// configuration directory, whose JSON cannot be joined to HCL text.
RunConfig read_run_config(const ToolPaths& paths, const std::vector<std::string>& environment);

// Whose configuration a run joins: OpenTofu's when COMMAND is `tofu`, or
// when OpenTofu is present and Terraform is not; else Terraform's. (Both
// read the run's TF_CLI_CONFIG_FILE; a script that runs both gets
// Terraform's configuration.)
Tool run_tool(std::string_view command, bool terraform_present, bool opentofu_present);

// The generated file's text: `config`'s user text, then `host_blocks`.
std::string run_config_text(const RunConfig& config, const std::string& host_blocks);

}  // namespace hostkeeper::helper::terraform_config
