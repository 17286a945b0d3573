#include "helper/terraform_config/shadowing.hpp"

#include <unistd.h>  // environ

#include <set>
#include <string_view>
#include <system_error>

#include "helper/terraform_config/cli_config.hpp"
#include "helper/terraform_config/plaintext_credentials.hpp"
#include "helper/terraform_config/token_variables.hpp"
#include "helper/terraform_config/tool_locations.hpp"
#include "proto/file_io.hpp"
#include "proto/hostname.hpp"

namespace hostkeeper::helper::terraform_config {
namespace fs = std::filesystem;

namespace {

std::optional<std::string> normalized(const std::string& host) {
    try {
        return proto::normalize_hostname(host);
    } catch (const std::exception&) {
        return std::nullopt;
    }
}

}  // namespace

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

std::vector<TokenVariable> token_variables() {
    std::vector<TokenVariable> variables;
    for (char** entry = environ; *entry != nullptr; ++entry) {
        const std::string_view text(*entry);
        if (text.substr(0, kTokenVariablePrefix.size()) != kTokenVariablePrefix) continue;
        const std::string_view name = text.substr(0, text.find('='));
        variables.push_back({std::string(name), decode_token_variable(name)});
    }
    return variables;
}

const char* shadow_source_name(ShadowSource source) {
    switch (source) {
        case ShadowSource::environment:
            return "environment";
        case ShadowSource::credentials_file:
            return "credentials.tfrc.json";
        case ShadowSource::credentials_block:
            return "credentials block";
    }
    return "?";
}

std::map<std::string, std::vector<Shadow>> shadows(std::vector<std::string>* errors) {
    std::map<std::string, std::vector<Shadow>> found;
    for (const auto& variable : token_variables()) {
        if (variable.host)
            found[*variable.host].push_back({ShadowSource::environment, variable.name});
    }
    for (const auto& block : credentials_blocks(errors)) {
        if (const auto host = normalized(block.host))
            found[*host].push_back({ShadowSource::credentials_block, block.where});
    }
    for (const auto& path : credentials_file_paths()) {
        std::error_code ec;
        if (!fs::exists(path, ec)) continue;
        try {
            const CredentialsFile file(path);
            for (const auto& spelled : file.hosts()) {
                if (const auto host = normalized(spelled))
                    found[*host].push_back({ShadowSource::credentials_file, path.string()});
            }
        } catch (const proto::FileError& e) {
            if (errors != nullptr) errors->push_back(e.what());
        }
    }
    return found;
}

}  // namespace hostkeeper::helper::terraform_config
