#include "helper/terraform_config/tool_locations.hpp"

#include <cstdlib>
#include <string_view>

#include "proto/program_search.hpp"

namespace hostkeeper::helper::terraform_config {
namespace fs = std::filesystem;

namespace {

const char* process_env(const char* name) {
    return std::getenv(name);
}

std::string env_or_empty(const proto::EnvLookup& env, const char* name) {
    const char* value = env(name);
    return value != nullptr ? value : "";
}

bool path_exists(const fs::path& path) {
    std::error_code ec;
    return fs::exists(path, ec);
}

fs::path cli_config_override(const proto::EnvLookup& env) {
    // Both tools honour these two, in this order (terraform's and OpenTofu's cliconfig.go).
    std::string file = env_or_empty(env, "TF_CLI_CONFIG_FILE");
    if (file.empty()) file = env_or_empty(env, "TERRAFORM_CONFIG");
    return file;
}

bool on_path(const std::string& command, const proto::EnvLookup& env) {
    const std::string path = env_or_empty(env, "PATH");
    return !path.empty() && proto::find_program(command, path).has_value();
}

}  // namespace

fs::path home_directory(const proto::EnvLookup& env) {
    const std::string home = env_or_empty(env, "HOME");
    return home.empty() ? fs::path("/") : fs::path(home);
}

ToolPaths locate(Tool tool, const proto::EnvLookup& env) {
    const fs::path home = home_directory(env);
    const fs::path dot_terraform_d = home / ".terraform.d";
    const fs::path override_file = cli_config_override(env);
    ToolPaths paths;
    paths.tool = tool;
    paths.cli_config_from_env = !override_file.empty();
    if (tool == Tool::terraform) {
        paths.name = "Terraform";
        paths.command = "terraform";
        paths.cli_config = paths.cli_config_from_env ? override_file : home / ".terraformrc";
        paths.config_dir = dot_terraform_d;
        paths.plugin_dirs = {dot_terraform_d / "plugins"};
    } else {
        paths.name = "OpenTofu";
        paths.command = "tofu";
        const std::string xdg_config = env_or_empty(env, "XDG_CONFIG_HOME");
        const std::string xdg_data = env_or_empty(env, "XDG_DATA_HOME");
        if (paths.cli_config_from_env) {
            paths.cli_config = override_file;
        } else if (path_exists(home / ".tofurc") ||
                   (!path_exists(home / ".terraformrc") && xdg_config.empty())) {
            paths.cli_config = home / ".tofurc";  // there, or nothing else is
        } else if (path_exists(home / ".terraformrc")) {
            paths.cli_config = home / ".terraformrc";
        } else {
            paths.cli_config = fs::path(xdg_config) / "opentofu" / "tofurc";
        }
        const bool legacy_dir = path_exists(dot_terraform_d);
        paths.config_dir =
            legacy_dir || xdg_config.empty() ? dot_terraform_d : fs::path(xdg_config) / "opentofu";
        paths.plugin_dirs = {legacy_dir || xdg_data.empty()
                                 ? dot_terraform_d / "plugins"
                                 : fs::path(xdg_data) / "opentofu" / "plugins"};
    }
    paths.credentials_json = paths.config_dir / "credentials.tfrc.json";
    return paths;
}

ToolPaths locate(Tool tool) {
    return locate(tool, process_env);
}

bool tool_present(const ToolPaths& paths, const proto::EnvLookup& env) {
    if (on_path(paths.command, env)) return true;
    // Files only this tool uses: ~/.terraform.d and ~/.terraformrc count for
    // Terraform alone, although OpenTofu reads them too.
    const fs::path home = home_directory(env);
    if (paths.tool == Tool::terraform)
        return path_exists(home / ".terraformrc") || path_exists(home / ".terraform.d");
    const std::string xdg_config = env_or_empty(env, "XDG_CONFIG_HOME");
    const std::string xdg_data = env_or_empty(env, "XDG_DATA_HOME");
    return path_exists(home / ".tofurc") ||
           (!xdg_config.empty() && path_exists(fs::path(xdg_config) / "opentofu")) ||
           (!xdg_data.empty() && path_exists(fs::path(xdg_data) / "opentofu"));
}

bool tool_present(const ToolPaths& paths) {
    return tool_present(paths, process_env);
}

fs::path installed_helper() {
    std::error_code ec;
    const fs::path self = fs::read_symlink("/proc/self/exe", ec);
    if (ec) return fs::path("/usr/bin") / kHelperName;
    return self.parent_path() / kHelperName;
}

}  // namespace hostkeeper::helper::terraform_config
