#pragma once
// What takes precedence over the helper in Terraform and OpenTofu (spec,
// "Precedence in the clients"): TF_TOKEN_* variables, then credentials
// blocks in CLI configuration files and credentials.tfrc.json.

#include <string>
#include <vector>

namespace hostkeeper::helper::terraform_config {

struct CredentialsBlock {
    std::string where;  // FILE:LINE
    std::string host;
};

// credentials "HOST" blocks in the CLI configuration files of both tools
// (each file once). A file that cannot be scanned adds a message to `errors`.
std::vector<CredentialsBlock> credentials_blocks(std::vector<std::string>* errors = nullptr);

// Names of the TF_TOKEN_* variables in the environment (values never read).
std::vector<std::string> token_variables();

}  // namespace hostkeeper::helper::terraform_config
