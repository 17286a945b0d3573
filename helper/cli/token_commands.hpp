#pragma once
// The commands that hand tokens out, for programs that do not speak the
// credentials-helper protocol:
//
// hostkeeper exec [--host HOST]... [--tfe HOST] -- COMMAND [ARGS...]
//   replaces itself (execvp) with COMMAND, whose environment has a
//   TF_TOKEN_* variable (token_variables.hpp) for each stored host, or each
//   named one; with --tfe HOST also TFE_TOKEN (the tfe provider and go-tfe),
//   TFE_HOSTNAME (the provider: a bare host, Unicode form, svchost reads it)
//   and TFE_ADDRESS (go-tfe: https://HOST). A variable for the same host in
//   the caller's environment (any spelling that decodes to it), and TFE_*
//   with --tfe, are replaced by the keyring's, with a note on stderr naming
//   the variable. Nothing is printed about a token. Exit status: COMMAND's;
//   127 when it is not found, 126 when it cannot be run; hostkeeper's own
//   failures use exit_codes.hpp (3: a named host has no credentials; 2: a
//   named host is invalid or cannot be encoded; 1: the keyring is locked or
//   failed). Nothing is run after any of them.
//
// hostkeeper token HOST [--force]
//   prints HOST's token and a newline, for scripts. Refuses (exit 2) when
//   standard output is a terminal, unless --force; exit 3 when nothing is
//   stored for HOST.

#include <CLI/CLI.hpp>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "helper/client/daemon_client.hpp"
#include "proto/secret.hpp"

namespace hostkeeper::helper::cli {

struct ExecOptions {
    std::vector<std::string> hosts;  // --host, in order; empty: every stored host
    std::string tfe;                 // --tfe HOST, "" when not given
    std::vector<std::string> command;
    bool registry_cache = false;  // --registry-cache (registry_run.hpp)
};

struct TokenOptions {
    std::string host;
    bool force = false;
};

// The subcommands, for main and the parsing tests.
CLI::App* add_exec_command(CLI::App& app, ExecOptions& options);
CLI::App* add_token_command(CLI::App& app, TokenOptions& options);

// A host's token from the daemon (`get`), or nullopt when nothing is stored.
// The answer is scrubbed. Throws the daemon's errors (keyring_locked...),
// keyring_error when the stored credentials have no string "token", and
// not_found with the daemon's reason when the token is withheld (a host
// refused it, or its expires_at has passed).
std::optional<proto::Secret> fetch_token(const client::ClientOptions& client,
                                         const std::string& host);

struct HostToken {
    std::string host;      // normalized
    std::string variable;  // its TF_TOKEN_* name
    proto::Secret token;
};

struct TfeToken {
    std::string host;  // normalized
    proto::Secret token;
};

struct ExecEnvironment {
    std::vector<proto::Secret> entries;  // NAME=VALUE: the inherited ones kept, then ours
    std::vector<std::string> notes;      // for stderr: what was replaced
    // Names dash drops, as "NAME (for HOST)": worth a note only when the
    // command is run by dash (runs_under_dash).
    std::vector<std::string> unportable;
    // NULL-terminated, pointing into `entries`.
    std::vector<char*> envp() const;
};

// COMMAND's environment: `inherited` (NAME=VALUE entries) without the
// variables ours replace, then a variable per host of `tokens` and, with
// `tfe`, TFE_TOKEN, TFE_HOSTNAME and TFE_ADDRESS.
ExecEnvironment build_exec_environment(const std::vector<std::string_view>& inherited,
                                       const std::vector<HostToken>& tokens,
                                       const std::optional<TfeToken>& tfe);

// One line about every name in `unportable` that dash, running `command`, drops.
std::string unportable_note(const std::vector<std::string>& unportable, const std::string& command);

// This process's environment as build_exec_environment takes it.
std::vector<std::string_view> current_environment();

// Returns only when COMMAND cannot be run (or hostkeeper failed first).
int run_exec(const client::ClientOptions& client, const ExecOptions& options);

int run_token(const client::ClientOptions& client, const TokenOptions& options);

}  // namespace hostkeeper::helper::cli
