#pragma once
// What takes precedence over the helper in Terraform and OpenTofu (spec,
// "Precedence in the clients"; credentials.go's ForHost): TF_TOKEN_*
// variables, then credentials blocks in CLI configuration files and
// credentials.tfrc.json.

#include <map>
#include <optional>
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

struct TokenVariable {
    std::string name;
    // The normalized host Terraform reads it for (token_variables.hpp), or
    // nullopt when its name names no valid host and Terraform ignores it.
    std::optional<std::string> host;
};

// The TF_TOKEN_* variables in the environment (values never read).
std::vector<TokenVariable> token_variables();

enum class ShadowSource { environment, credentials_file, credentials_block };

// "environment", "credentials.tfrc.json", "credentials block": the JSON names.
const char* shadow_source_name(ShadowSource source);

struct Shadow {
    ShadowSource source;
    std::string where;  // the variable's name; the file's path; FILE:LINE of the block
};

// Per normalized host, what Terraform and OpenTofu would use instead of the
// helper, variables first. Spellings of a host that do not normalize are left
// out, as both tools ignore them; a file that cannot be read or scanned adds
// a message to `errors`.
std::map<std::string, std::vector<Shadow>> shadows(std::vector<std::string>* errors = nullptr);

}  // namespace hostkeeper::helper::terraform_config
