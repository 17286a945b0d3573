#include "helper/terraform_config/run_config.hpp"

#include <algorithm>
#include <string_view>
#include <system_error>

#include "helper/terraform_config/plaintext_credentials.hpp"
#include "helper/terraform_config/token_variables.hpp"
#include "proto/file_io.hpp"
#include "proto/hostname.hpp"
#include "proto/json.hpp"
#include "proto/registry_cache_file.hpp"

namespace hostkeeper::helper::terraform_config {
namespace fs = std::filesystem;

namespace {

using HostTokens = std::map<std::string, proto::Secret>;

void add_once(std::vector<std::string>& list, const std::string& item) {
    if (std::find(list.begin(), list.end(), item) == list.end()) list.push_back(item);
}

bool is_json_config(const fs::path& path) {
    const std::string name = path.filename().string();
    return name.size() > 10 && name.substr(name.size() - 10) == ".tfrc.json";
}

// The tokens of a *.tfrc.json file that holds only "credentials" (as
// `terraform login` writes it); any other JSON configuration cannot be
// joined to the run's HCL file and is refused with CliConfigError.
HostTokens json_file_tokens(const fs::path& path) {
    HostTokens tokens;
    try {
        const CredentialsFile file(path);
        if (!file.holds_only_credentials()) {
            throw CliConfigError(path.string() +
                                 ": a JSON CLI configuration file with more than \"credentials\" "
                                 "cannot be joined to the run's configuration; write it in HCL "
                                 "syntax as a .tfrc file");
        }
        for (const std::string& host : file.hosts()) {
            const proto::Json& entry = file.credentials(host);
            if (!entry.is_object() || !entry.contains("token") || !entry["token"].is_string())
                continue;
            try {
                tokens.insert_or_assign(
                    proto::normalize_hostname(host),
                    proto::Secret(entry["token"].get_ref<const std::string&>()));
            } catch (const std::exception&) {
                // Terraform itself says what is wrong with the host.
            }
        }
    } catch (const proto::FileError& e) {
        throw CliConfigError(e.what());
    }
    return tokens;
}

// `file`'s text without its credentials blocks that hold a token (a comment
// stands in each one's place, keeping the lines after it where they were);
// the tokens go to `tokens`.
std::string text_without_tokens(const ScannedFile& file, HostTokens& tokens) {
    std::string text;
    std::size_t copied = 0;
    for (const HclBlock& block : file.scan.credentials) {
        std::string host;
        try {
            host = proto::normalize_hostname(block.label);
        } catch (const std::exception&) {
            continue;  // Terraform itself says what is wrong with it
        }
        const std::string_view body =
            std::string_view(file.text).substr(block.body_begin, block.end - 1 - block.body_begin);
        CliConfigScan scan = scan_cli_config(body);
        bool had_token = false;
        for (HclAttribute& attribute : scan.attributes) {
            if (attribute.name == "token") {
                tokens.insert_or_assign(host, proto::Secret(attribute.value));
                had_token = true;
            }
            proto::scrub(attribute.value);
        }
        if (!had_token) continue;
        text.append(file.text, copied, block.begin - copied);
        text += "# credentials \"" + host + "\": its token is passed as a TF_TOKEN_ variable";
        const std::string_view span =
            std::string_view(file.text).substr(block.begin, block.end - block.begin);
        text.append(static_cast<std::size_t>(std::count(span.begin(), span.end(), '\n')), '\n');
        copied = block.end;
    }
    text.append(file.text, copied);
    return text;
}

}  // namespace

RunConfig read_run_config(const ToolPaths& paths, const std::vector<std::string>& environment) {
    RunConfig config;
    config.hosts = {"registry.terraform.io", "registry.opentofu.org"};
    HostTokens main_tokens;
    std::map<fs::path, HostTokens> directory_tokens;  // Terraform reads them by name
    for (ScannedFile& file : scan_cli_config_files(paths)) {
        if (file.text.rfind(proto::kTfrcHeader, 0) == 0) continue;
        for (const HclBlock& block : file.scan.hosts) {
            try {
                add_once(config.kept_hosts, proto::normalize_hostname(block.label));
            } catch (const std::exception& e) {
                proto::scrub(file.text);
                throw CliConfigError(file.path.string() + ":" + std::to_string(block.line) +
                                     ": host \"" + block.label + "\": " + e.what());
            }
        }
        HostTokens& tokens =
            file.path == paths.cli_config ? main_tokens : directory_tokens[file.path];
        const std::string text = text_without_tokens(file, tokens);
        proto::scrub(file.text);
        config.user_text += "# from " + file.path.string() + "\n" + text;
        if (!text.empty() && text.back() != '\n') config.user_text += '\n';
        config.files.push_back(std::move(file.path));
    }
    if (!paths.cli_config_from_env) {
        std::error_code ec;
        for (fs::directory_iterator it(paths.config_dir, ec), end; !ec && it != end;
             it.increment(ec)) {
            if (is_json_config(it->path()))
                directory_tokens[it->path()] = json_file_tokens(it->path());
        }
    }
    config.tokens = std::move(main_tokens);
    for (auto& [file, tokens] : directory_tokens) {
        for (auto& [host, token] : tokens) config.tokens.insert_or_assign(host, std::move(token));
    }
    for (const auto& [host, token] : config.tokens) add_once(config.hosts, host);
    for (const std::string& name : environment) {
        if (name.substr(0, kTokenVariablePrefix.size()) != kTokenVariablePrefix) continue;
        if (const auto host = decode_token_variable(name)) add_once(config.hosts, *host);
    }
    return config;
}

Tool run_tool(std::string_view command, bool terraform_present, bool opentofu_present) {
    const std::string name = fs::path(command).filename().string();
    if (name == "tofu") return Tool::opentofu;
    if (name == "terraform") return Tool::terraform;
    return opentofu_present && !terraform_present ? Tool::opentofu : Tool::terraform;
}

std::string run_config_text(const RunConfig& config, const std::string& host_blocks) {
    return config.user_text + "# the run's registry cache (hostkeeper exec --registry-cache)\n" +
           host_blocks;
}

}  // namespace hostkeeper::helper::terraform_config
