// Terraform's and OpenTofu's CLI configuration (HCL), as the scanner behind
// setup, import, doctor and exec --registry-cache read it. Blocks found are
// the kinds asked for, on lines the text has; each block's span starts with
// its type and ends with "}", and its body scans on its own (the run's
// configuration cuts credentials blocks out by these spans).
#include <algorithm>

#include "fuzz_support.hpp"
#include "helper/terraform_config/cli_config.hpp"

using namespace hostkeeper;

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
    const std::string_view text = fuzz::text_of(data, size);
    const auto lines = static_cast<int>(std::count(text.begin(), text.end(), '\n')) + 1;
    try {
        const helper::terraform_config::CliConfigScan scan =
            helper::terraform_config::scan_cli_config(text);
        for (const auto& block : scan.helpers) {
            fuzz::require(block.type == "credentials_helper", "a helper block of another type");
            fuzz::require(block.line >= 1 && block.line <= lines,
                          "a helper block on a line the text lacks");
        }
        for (const auto& block : scan.credentials) {
            fuzz::require(block.type == "credentials", "a credentials block of another type");
            fuzz::require(block.line >= 1 && block.line <= lines,
                          "a credentials block on a line the text lacks");
            fuzz::require(block.begin < block.body_begin && block.body_begin <= block.end &&
                              block.end <= text.size(),
                          "a credentials block's span is out of order");
            fuzz::require(text.substr(block.begin, 11) == "credentials" &&
                              text[block.body_begin - 1] == '{' && text[block.end - 1] == '}',
                          "a credentials block's span does not hold the block");
            helper::terraform_config::scan_cli_config(
                text.substr(block.body_begin, block.end - 1 - block.body_begin));
        }
    } catch (const helper::terraform_config::CliConfigError& e) {
        fuzz::require(std::string_view(e.what()).find("line ") != std::string_view::npos,
                      "a scan error does not name its line");
    }
    return 0;
}
