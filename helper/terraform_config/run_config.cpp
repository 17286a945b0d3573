#include "helper/terraform_config/run_config.hpp"

#include <algorithm>
#include <string_view>
#include <system_error>

#include "helper/terraform_config/token_variables.hpp"
#include "proto/hostname.hpp"
#include "proto/registry_cache_file.hpp"

namespace hostkeeper::helper::terraform_config {
namespace fs = std::filesystem;

namespace {

void add_once(std::vector<std::string>& list, const std::string& item) {
    if (std::find(list.begin(), list.end(), item) == list.end()) list.push_back(item);
}

// Terraform also reads *.tfrc.json from its configuration directory.
void refuse_json_files(const ToolPaths& paths) {
    if (paths.cli_config_from_env) return;
    std::error_code ec;
    for (fs::directory_iterator it(paths.config_dir, ec), end; !ec && it != end; it.increment(ec)) {
        const std::string name = it->path().filename().string();
        if (name.size() > 10 && name.substr(name.size() - 10) == ".tfrc.json") {
            throw CliConfigError(it->path().string() +
                                 ": a JSON CLI configuration file cannot be joined to the "
                                 "run's configuration; write it in HCL syntax as a .tfrc file");
        }
    }
}

}  // namespace

RunConfig read_run_config(const ToolPaths& paths, const std::vector<std::string>& environment) {
    refuse_json_files(paths);
    RunConfig config;
    config.hosts = {"registry.terraform.io", "registry.opentofu.org"};
    for (ScannedFile& file : scan_cli_config_files(paths)) {
        if (file.text.rfind(proto::kTfrcHeader, 0) == 0) continue;
        for (const HclBlock& block : file.scan.hosts) {
            try {
                add_once(config.kept_hosts, proto::normalize_hostname(block.label));
            } catch (const std::exception& e) {
                throw CliConfigError(file.path.string() + ":" + std::to_string(block.line) +
                                     ": host \"" + block.label + "\": " + e.what());
            }
        }
        for (const HclBlock& block : file.scan.credentials) {
            try {
                add_once(config.hosts, proto::normalize_hostname(block.label));
            } catch (const std::exception&) {
                // Terraform itself says what is wrong with it.
            }
        }
        config.user_text += "# from " + file.path.string() + "\n" + file.text;
        if (!file.text.empty() && file.text.back() != '\n') config.user_text += '\n';
        config.files.push_back(std::move(file.path));
    }
    for (const std::string& name : environment) {
        if (name.substr(0, kTokenVariablePrefix.size()) != kTokenVariablePrefix) continue;
        if (const auto host = decode_token_variable(name)) add_once(config.hosts, *host);
    }
    return config;
}

std::string run_config_text(const RunConfig& config, const std::string& host_blocks) {
    return config.user_text + "# the run's registry cache (hostkeeper exec --registry-cache)\n" +
           host_blocks;
}

}  // namespace hostkeeper::helper::terraform_config
