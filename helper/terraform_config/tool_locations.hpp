#pragma once
// Where Terraform and OpenTofu look for things on Linux: the CLI configuration
// file each one reads, the plugin directories searched for credentials
// helpers, and credentials.tfrc.json. Sources: docs/specs
// credentials-helper-protocol.md, and OpenTofu's cliconfig (config_unix.go).

#include <filesystem>
#include <string>
#include <vector>

#include "proto/socket_path.hpp"

namespace hostkeeper::helper::terraform_config {

inline constexpr const char* kHelperName = "terraform-credentials-hostkeeper";
inline constexpr const char* kHelperLabel = "hostkeeper";  // credentials_helper "hostkeeper" {}

enum class Tool { terraform, opentofu };

struct ToolPaths {
    Tool tool = Tool::terraform;
    std::string name;                  // "Terraform", "OpenTofu"
    std::string command;               // "terraform", "tofu"
    std::filesystem::path cli_config;  // the one file the tool reads
    bool cli_config_from_env = false;  // named by TF_CLI_CONFIG_FILE (or TERRAFORM_CONFIG)
    std::filesystem::path config_dir;  // *.tfrc files and credentials.tfrc.json live here
    std::vector<std::filesystem::path> plugin_dirs;  // where the tool searches for the helper
    std::filesystem::path credentials_json;
};

// Terraform: $TF_CLI_CONFIG_FILE, else ~/.terraformrc; ~/.terraform.d.
// OpenTofu: $TF_CLI_CONFIG_FILE, else ~/.tofurc, else ~/.terraformrc when
// only that exists, else $XDG_CONFIG_HOME/opentofu/tofurc when
// XDG_CONFIG_HOME is set; ~/.terraform.d unless it is missing and XDG
// directories are set ($XDG_CONFIG_HOME/opentofu, $XDG_DATA_HOME/opentofu/plugins).
ToolPaths locate(Tool tool, const proto::EnvLookup& env);
ToolPaths locate(Tool tool);  // with the process's environment

// "Present" means: its command is on PATH, or a file only it uses exists
// (Terraform: ~/.terraformrc, ~/.terraform.d; OpenTofu: ~/.tofurc,
// $XDG_CONFIG_HOME/opentofu, $XDG_DATA_HOME/opentofu).
bool tool_present(const ToolPaths& paths, const proto::EnvLookup& env);
bool tool_present(const ToolPaths& paths);

std::filesystem::path home_directory(const proto::EnvLookup& env);

// The helper binary installed next to this program (/proc/self/exe).
std::filesystem::path installed_helper();

}  // namespace hostkeeper::helper::terraform_config
