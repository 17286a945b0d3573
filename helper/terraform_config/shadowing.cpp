#include "helper/terraform_config/shadowing.hpp"

#include <set>
#include <string_view>

#include "helper/terraform_config/cli_config.hpp"
#include "helper/terraform_config/tool_locations.hpp"

extern char** environ;

namespace hostkeeper::helper::terraform_config {

std::vector<CredentialsBlock> credentials_blocks(std::vector<std::string>* errors) {
    std::vector<CredentialsBlock> blocks;
    std::set<std::string> seen;
    for (const Tool tool : {Tool::terraform, Tool::opentofu}) {
        try {
            for (const auto& file : scan_cli_config_files(locate(tool))) {
                if (!seen.insert(file.path.string()).second) continue;
                for (const auto& block : file.scan.credentials) {
                    blocks.push_back(
                        {file.path.string() + ":" + std::to_string(block.line), block.label});
                }
            }
        } catch (const std::exception& e) {
            if (errors != nullptr && seen.insert(e.what()).second) errors->push_back(e.what());
        }
    }
    return blocks;
}

std::vector<std::string> token_variables() {
    std::vector<std::string> names;
    for (char** entry = environ; *entry != nullptr; ++entry) {
        const std::string_view text(*entry);
        if (text.rfind("TF_TOKEN_", 0) != 0) continue;
        names.emplace_back(text.substr(0, text.find('=')));
    }
    return names;
}

}  // namespace hostkeeper::helper::terraform_config
