#pragma once
// Terraform/OpenTofu CLI configuration files (HCL): finding the
// credentials_helper, credentials and host blocks in them, with their lines.
//
// There is no HCL library for C++ in Debian, so this is a small scanner, not
// a parser. It follows strings (with escapes), #, // and /* */ comments,
// heredocs (<<EOF and <<-EOF) and bracket nesting (each closed by its own
// kind), and reports the blocks that open at the top level: an identifier,
// then labels (quoted or bare), then "{" on the same line, with where each
// begins and ends; and the top-level attributes whose value is one string
// (`name = "value"`, read inside a block's body to find a credentials
// block's token). Limits: it does not validate the rest of the file; a
// block type split from its labels or "{" across lines is not seen; a
// string's escapes are not decoded (the character after a backslash is
// kept); the JSON form of the CLI configuration (*.tfrc.json) is not
// scanned.

#include <filesystem>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

#include "helper/terraform_config/tool_locations.hpp"

namespace hostkeeper::helper::terraform_config {

struct HclBlock {
    std::string type;            // "credentials_helper", "credentials", "host"
    std::string label;           // its first label ("" when it has none)
    int line = 0;                // 1-based line of the block's type
    std::size_t begin = 0;       // offset of the block's type
    std::size_t body_begin = 0;  // offset just past its "{"
    std::size_t end = 0;         // offset just past its closing "}"
};

struct HclAttribute {
    std::string name;
    std::string value;  // the string's characters, escapes not decoded
    int line = 0;
};

struct CliConfigScan {
    std::vector<HclBlock> helpers;         // credentials_helper blocks
    std::vector<HclBlock> credentials;     // credentials "HOST" blocks
    std::vector<HclBlock> hosts;           // host "HOST" blocks
    std::vector<HclAttribute> attributes;  // top-level name = "string"
};

// Thrown when the text is not balanced HCL (an unterminated string, comment,
// heredoc or block); the message names the line.
class CliConfigError : public std::runtime_error {
  public:
    using std::runtime_error::runtime_error;
};

CliConfigScan scan_cli_config(std::string_view text);

// A scanned file, for reports that name file and line.
struct ScannedFile {
    std::filesystem::path path;
    CliConfigScan scan;
    std::string text;
};

// The files a tool reads its CLI configuration from: the main file (when it
// exists) and, unless the environment names the file, every *.tfrc in its
// configuration directory. Throws CliConfigError (file named) or FileError.
std::vector<ScannedFile> scan_cli_config_files(const ToolPaths& paths);

}  // namespace hostkeeper::helper::terraform_config
