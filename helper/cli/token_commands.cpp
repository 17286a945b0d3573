#include "helper/cli/token_commands.hpp"

#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <set>
#include <system_error>

#include "helper/cli/command.hpp"
#include "helper/cli/dash_command.hpp"
#include "helper/cli/list.hpp"
#include "helper/cli/registry_run.hpp"
#include "helper/client/exit_codes.hpp"
#include "helper/client/printable_output.hpp"
#include "helper/terraform_config/token_variables.hpp"
#include "helper/terraform_config/tool_locations.hpp"
#include "proto/error.hpp"
#include "proto/hostname.hpp"
#include "proto/messages.hpp"
#include "proto/paths.hpp"
#include "proto/port_link.hpp"

namespace hostkeeper::helper::cli {
namespace {
using proto::Error;
using proto::ErrorCode;
using proto::Json;

constexpr const char* kTfeVariables[] = {"TFE_TOKEN", "TFE_HOSTNAME", "TFE_ADDRESS"};

std::string_view name_of(std::string_view entry) {
    return entry.substr(0, entry.find('='));
}

proto::Secret entry(std::string_view name, std::string_view value) {
    std::string text;
    text.reserve(name.size() + 1 + value.size());
    text.append(name).append("=").append(value);
    return proto::Secret::adopt(text);
}

void write_all(int fd, std::string_view bytes) {
    while (!bytes.empty()) {
        const ssize_t n = ::write(fd, bytes.data(), bytes.size());
        if (n < 0 && errno == EINTR) continue;
        if (n <= 0) {
            throw Error(ErrorCode::internal,
                        std::string("cannot write standard output: ") + std::strerror(errno));
        }
        bytes.remove_prefix(static_cast<std::size_t>(n));
    }
}

std::vector<HostToken> collect_tokens(const client::ClientOptions& client,
                                      const ExecOptions& options) {
    std::vector<std::string> hosts;
    const bool all = options.hosts.empty();
    if (all) {
        hosts = listed_hosts(list_answer(client));
    } else {
        std::set<std::string> seen;
        for (const auto& named : options.hosts) {
            std::string host = proto::normalize_hostname(named);
            if (seen.insert(host).second) hosts.push_back(std::move(host));
        }
    }
    std::vector<HostToken> tokens;
    for (const auto& host : hosts) {
        const auto variable = terraform_config::encode_token_variable(host);
        if (!variable) {
            const std::string why =
                host +
                " cannot be encoded as a TF_TOKEN_* variable: Terraform and OpenTofu "
                "would not read its name back as this host";
            if (!all) throw Error(ErrorCode::bad_host, why + "; nothing was run");
            client::print_printable(stderr, "hostkeeper exec: %s; left out\n", why.c_str());
            continue;
        }
        std::optional<proto::Secret> token;
        try {
            token = fetch_token(client, host);
        } catch (const Error& e) {
            // Withheld (refused, expired): named, it is an error; else left out.
            if (!all || e.code() != ErrorCode::not_found) throw;
            client::print_printable(stderr, "hostkeeper exec: %s; left out\n", e.what());
            continue;
        }
        if (!token) {
            if (!all) {
                throw Error(ErrorCode::not_found, "no credentials are stored for " +
                                                      host_for_people(host) + "; nothing was run");
            }
            client::print_printable(
                stderr, "hostkeeper exec: %s was forgotten meanwhile; left out\n", host.c_str());
            continue;
        }
        tokens.push_back({host, *variable, std::move(*token)});
    }
    if (all && hosts.empty()) {
        client::print_printable(
            stderr,
            "hostkeeper exec: no credentials are stored; COMMAND gets no TF_TOKEN_* "
            "variables\n");
    }
    return tokens;
}

}  // namespace

CLI::App* add_exec_command(CLI::App& app, ExecOptions& options) {
    auto* cmd = app.add_subcommand(
        "exec",
        "run COMMAND with a TF_TOKEN_* variable for each stored host (or each --host), so "
        "programs that do not run the credentials helper get the keyring's tokens");
    cmd->add_option("--host", options.hosts,
                    "only this host (repeat for more); default: every stored host")
        ->allow_extra_args(false);
    cmd->add_option("--tfe", options.tfe,
                    "also set TFE_TOKEN, TFE_HOSTNAME and TFE_ADDRESS for this HCP Terraform or "
                    "Terraform Enterprise host (the tfe provider, go-tfe)");
    cmd->add_flag("--registry-cache", options.registry_cache,
                  "give COMMAND and everything it starts the registry cache for this run: a "
                  "loopback port of the run's own where the registry port is not set up (CI "
                  "jobs, containers); no token is added unless --host or --tfe asks");
    cmd->add_option("command", options.command, "COMMAND [ARGS...], after --")->required();
    cmd->footer(
        "Exit status: COMMAND's; 127 COMMAND not found, 126 not executable; 1 the keyring is "
        "locked or failed, 2 a bad or unencodable --host, 3 a --host without credentials "
        "(COMMAND is then not run).");
    return cmd;
}

CLI::App* add_token_command(CLI::App& app, TokenOptions& options) {
    auto* cmd = app.add_subcommand(
        "token", "print HOST's token for a script (refused when standard output is a terminal)");
    cmd->add_option("host", options.host, "a registry hostname")->required();
    cmd->add_flag("--force", options.force, "print it even to a terminal");
    cmd->footer(
        "Exit status: 0 printed; 2 standard output is a terminal (without --force) or HOST is "
        "invalid; 3 no credentials stored for HOST; 1 the keyring is locked or failed.");
    return cmd;
}

std::optional<proto::Secret> fetch_token(const client::ClientOptions& client,
                                         const std::string& host) {
    Json request = proto::make_request(proto::Op::get);
    request["host"] = host;
    Json answer = client::DaemonClient(client).call(request);
    const proto::ScrubGuard guard(answer);
    if (const auto withheld = answer.find("withheld");
        withheld != answer.end() && withheld->is_object()) {
        throw Error(ErrorCode::not_found,
                    "the token stored for " + host_for_people(host) +
                        " is not handed out: " + withheld->value("message", "withheld"));
    }
    if (!answer.value("found", false)) return std::nullopt;
    const auto credentials = answer.find("credentials");
    if (credentials == answer.end() || !credentials->is_object()) return std::nullopt;
    const auto token = credentials->find("token");
    if (token == credentials->end() || !token->is_string()) {
        throw Error(ErrorCode::keyring_error,
                    "the credentials stored for " + host + " have no \"token\" string");
    }
    return proto::Secret(token->get_ref<const std::string&>());
}

std::vector<char*> ExecEnvironment::envp() const {
    std::vector<char*> pointers;
    pointers.reserve(entries.size() + 1);
    // NOLINTNEXTLINE(cppcoreguidelines-pro-type-const-cast): execve's type; it does not write
    for (const auto& e : entries) pointers.push_back(const_cast<char*>(e.c_str()));
    pointers.push_back(nullptr);
    return pointers;
}

ExecEnvironment build_exec_environment(const std::vector<std::string_view>& inherited,
                                       const std::vector<HostToken>& tokens,
                                       const std::optional<TfeToken>& tfe) {
    std::set<std::string> granted;
    for (const auto& token : tokens) granted.insert(token.host);
    ExecEnvironment environment;
    for (const auto& item : inherited) {
        const std::string_view name = name_of(item);
        if (name.substr(0, terraform_config::kTokenVariablePrefix.size()) ==
            terraform_config::kTokenVariablePrefix) {
            const auto host = terraform_config::decode_token_variable(name);
            if (host && granted.count(*host) != 0) {
                environment.notes.push_back(std::string(name) +
                                            " from the environment is replaced by the keyring's "
                                            "token for " +
                                            *host);
                continue;
            }
        }
        bool replaced = false;
        for (const char* tfe_name : kTfeVariables) replaced = replaced || (tfe && name == tfe_name);
        if (replaced) {
            environment.notes.push_back(
                std::string(name) + " from the environment is replaced (--tfe " + tfe->host + ")");
            continue;
        }
        environment.entries.emplace_back(item);
    }
    for (const auto& token : tokens) {
        environment.entries.push_back(entry(token.variable, token.token.view()));
        if (!terraform_config::shell_portable(token.variable))
            environment.unportable.push_back(token.variable + " (for " + token.host + ")");
    }
    if (tfe) {
        environment.entries.push_back(entry("TFE_TOKEN", tfe->token.view()));
        environment.entries.push_back(entry("TFE_HOSTNAME", proto::display_hostname(tfe->host)));
        environment.entries.push_back(entry("TFE_ADDRESS", "https://" + tfe->host));
    }
    return environment;
}

std::string unportable_note(const std::vector<std::string>& names, const std::string& command) {
    std::string joined;
    for (const auto& name : names) joined += (joined.empty() ? "" : ", ") + name;
    return joined + (names.size() == 1 ? " is not a shell name" : " are not shell names") + ": " +
           command +
           " is run by dash (Debian's /bin/sh), which drops such variables; run Terraform "
           "directly or through bash";
}

std::vector<std::string_view> current_environment() {
    std::vector<std::string_view> entries;
    for (char** item = environ; *item != nullptr; ++item) entries.emplace_back(*item);
    return entries;
}

namespace {

// Whether a run can use the registry port: hostkeeper-portd holds it here,
// `setup --registry-cache` was run (its file exists), and Terraform will
// read the host blocks setup wrote (no TF_CLI_CONFIG_FILE or
// TERRAFORM_CONFIG names a file of the user's, which makes Terraform skip
// its configuration directory). Otherwise the run needs a port of its own.
bool registry_port_usable() {
    if (terraform_config::locate(terraform_config::Tool::terraform).cli_config_from_env)
        return false;
    std::error_code ec;
    if (!std::filesystem::exists(proto::registry_cache_config_path(), ec)) return false;
    try {
        proto::connect_port_service(proto::port_socket_path(), proto::PortVerb::probe,
                                    std::chrono::seconds(1));
        return true;
    } catch (const proto::PortServiceError&) {
        return false;
    }
}

}  // namespace

int run_exec(const client::ClientOptions& client, const ExecOptions& options) {
    if (options.command.empty()) {
        client::print_printable(stderr,
                                "hostkeeper exec: no COMMAND given (hostkeeper exec -- COMMAND)\n");
        return client::kExitUsage;
    }
    std::optional<TfeToken> tfe;
    std::string tfe_host;
    if (!options.tfe.empty()) tfe_host = proto::normalize_hostname(options.tfe);
    ExecEnvironment environment;
    {
        // A run of the registry cache needs no keyring: tokens only when asked.
        const bool no_tokens = options.registry_cache && options.hosts.empty();
        std::vector<HostToken> tokens =
            no_tokens ? std::vector<HostToken>{} : collect_tokens(client, options);
        if (!tfe_host.empty()) {
            auto token = fetch_token(client, tfe_host);
            if (!token) {
                throw Error(ErrorCode::not_found, "no credentials are stored for " +
                                                      host_for_people(tfe_host) +
                                                      " (--tfe); nothing was run");
            }
            tfe = TfeToken{tfe_host, std::move(*token)};
        }
        environment = build_exec_environment(current_environment(), tokens, tfe);
        tfe.reset();
    }  // the tokens' own copies are scrubbed here; the environment holds the rest
    for (const auto& note : environment.notes)
        client::print_printable(stderr, "hostkeeper exec: %s\n", note.c_str());
    if (!environment.unportable.empty() && runs_under_dash(options.command.front())) {
        client::print_printable(
            stderr, "hostkeeper exec: %s\n",
            unportable_note(environment.unportable, options.command.front()).c_str());
    }
    std::fflush(stderr);
    if (options.registry_cache && !registry_port_usable())
        return run_with_registry_cache(client, options.command, environment.entries);

    std::vector<char*> argv;
    // NOLINTNEXTLINE(cppcoreguidelines-pro-type-const-cast): execvp's type; it does not write
    for (const auto& arg : options.command) argv.push_back(const_cast<char*>(arg.c_str()));
    argv.push_back(nullptr);
    std::vector<char*> envp = environment.envp();
    ::execvpe(argv[0], argv.data(), envp.data());
    const int error = errno;
    if (error == ENOENT) {
        client::print_printable(stderr, "hostkeeper exec: %s: command not found\n", argv[0]);
        return client::kExitCommandNotFound;
    }
    client::print_printable(stderr, "hostkeeper exec: %s: %s\n", argv[0], std::strerror(error));
    return client::kExitCannotExecute;
}

int run_token(const client::ClientOptions& client, const TokenOptions& options) {
    const std::string host = proto::normalize_hostname(options.host);
    if (!options.force && ::isatty(STDOUT_FILENO) == 1) {
        client::print_printable(
            stderr,
            "hostkeeper token: standard output is a terminal: not printing the token "
            "for %s there (it would stay in the scrollback); pipe or redirect it, or "
            "give --force\n",
            host_for_people(host).c_str());
        return client::kExitUsage;
    }
    const auto token = fetch_token(client, host);
    if (!token) {
        throw Error(ErrorCode::not_found, "no credentials are stored for " + host_for_people(host));
    }
    std::string out(token->view());
    out += '\n';
    const proto::ScrubGuard guard(out);
    write_all(STDOUT_FILENO, out);
    return client::kExitOk;
}

namespace {

class ExecCommand final : public Command {
  public:
    CLI::App* add_to(CLI::App& app) override { return add_exec_command(app, options_); }
    int run(const client::ClientOptions& client) override { return run_exec(client, options_); }

  private:
    ExecOptions options_;
};

class TokenCommand final : public Command {
  public:
    CLI::App* add_to(CLI::App& app) override { return add_token_command(app, options_); }
    int run(const client::ClientOptions& client) override { return run_token(client, options_); }

  private:
    TokenOptions options_;
};

}  // namespace

std::unique_ptr<Command> exec_command() {
    return std::make_unique<ExecCommand>();
}
std::unique_ptr<Command> token_command() {
    return std::make_unique<TokenCommand>();
}

}  // namespace hostkeeper::helper::cli
