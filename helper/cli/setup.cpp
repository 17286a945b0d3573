#include "helper/cli/setup.hpp"

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <functional>
#include <set>
#include <string>
#include <vector>

#include "helper/cli/answer_text.hpp"
#include "helper/cli/command.hpp"
#include "helper/cli/containers_config.hpp"
#include "helper/cli/git_config.hpp"
#include "helper/cli/list.hpp"
#include "helper/cli/registry_cache_setup.hpp"
#include "helper/cli/setup_plan.hpp"
#include "helper/cli/token_commands.hpp"
#include "helper/cli/user_systemd.hpp"
#include "helper/client/common_cli.hpp"
#include "helper/client/daemon_client.hpp"
#include "helper/client/exit_codes.hpp"
#include "helper/client/printable_output.hpp"
#include "helper/terraform_config/cli_config.hpp"
#include "helper/terraform_config/plaintext_credentials.hpp"
#include "helper/terraform_config/tool_locations.hpp"
#include "proto/error.hpp"
#include "proto/file_io.hpp"
#include "proto/json.hpp"
#include "proto/messages.hpp"
#include "proto/paths.hpp"

namespace hostkeeper::helper::cli {
namespace fs = std::filesystem;
using proto::Json;

namespace {

const std::string kBlockText =
    std::string("# Added by \"hostkeeper setup\"; \"hostkeeper setup --undo\" removes it.\n") +
    "credentials_helper \"" + terraform_config::kHelperLabel + "\" {}\n";

fs::path state_path() {
    return proto::setup_record_path();
}

Json load_state() {
    const fs::path path = state_path();
    const auto text = proto::read_file_if_exists(path);
    if (!text) return Json{{"version", 1}, {"actions", Json::array()}};
    Json state;
    try {
        state = proto::parse_json(*text);
    } catch (const proto::JsonError&) {
        state = nullptr;  // refused just below
    }
    if (!state.is_object() || !state.contains("actions") || !state["actions"].is_array()) {
        throw proto::FileError(path.string() +
                               " is not hostkeeper setup's record; move it away to continue");
    }
    return state;
}

void save_state(const Json& state) {
    const fs::path path = state_path();
    if (state["actions"].empty()) {
        proto::remove_file(path);
        return;
    }
    fs::create_directories(path.parent_path());
    proto::write_file_atomically(path, state.dump(2) + "\n", 0600);
}

bool links_to(const fs::path& link, const fs::path& target) {
    std::error_code ec;
    return fs::is_symlink(fs::symlink_status(link, ec)) && fs::read_symlink(link, ec) == target &&
           !ec;
}

void plan_link(Plan& plan, const std::string& tool, const fs::path& dir, const fs::path& target) {
    const fs::path link = dir / terraform_config::kHelperName;
    if (!plan.seen.insert(link).second) return;
    std::error_code ec;
    const auto status = fs::symlink_status(link, ec);
    if (links_to(link, target)) {
        plan.notes.push_back(tool + ": " + link.string() + " already links to " + target.string());
        return;
    }
    std::string replaced;
    if (fs::is_symlink(status)) {
        replaced = fs::read_symlink(link, ec).string();
    } else if (fs::exists(status)) {
        plan.refusals.push_back(
            tool + ": " + link.string() +
            " exists and is not a symlink; move it away and run hostkeeper setup again");
        return;
    }
    const std::string what = link.string() + " -> " + target.string() +
                             (replaced.empty() ? "" : " (replacing the link to " + replaced + ")");
    plan.steps.push_back({tool + ": would link " + what, tool + ": linked " + what, [=] {
                              fs::create_directories(dir);
                              if (!replaced.empty()) fs::remove(link);
                              fs::create_symlink(target, link);
                              return Json{{"action", "link"},
                                          {"path", link.string()},
                                          {"target", target.string()},
                                          {"replaced", replaced.empty() ? Json() : Json(replaced)}};
                          }});
}

std::string where(const terraform_config::ScannedFile& file,
                  const terraform_config::HclBlock& block) {
    return file.path.string() + ":" + std::to_string(block.line);
}

void plan_block(Plan& plan, const terraform_config::ToolPaths& paths) {
    if (!plan.seen.insert(paths.cli_config).second) return;
    const std::string tool = paths.name;
    std::vector<terraform_config::ScannedFile> files;
    try {
        files = terraform_config::scan_cli_config_files(paths);
    } catch (const std::exception& e) {
        plan.refusals.push_back(tool + ": cannot read its CLI configuration: " + e.what() +
                                "; fix the file and run hostkeeper setup again");
        return;
    }
    std::vector<std::string> ours, others;
    for (const auto& file : files) {
        for (const auto& block : file.scan.helpers) {
            (block.label == terraform_config::kHelperLabel ? ours : others)
                .push_back(where(file, block) + ": credentials_helper \"" + block.label + "\"");
        }
    }
    for (const auto& other : others) {
        std::string refusal = tool;
        refusal.append(": ").append(other).append(" is configured, and ").append(tool);
        refusal.append(
            " allows only one credentials_helper; remove that block to use hostkeeper (or leave ");
        refusal.append(tool).append(" out of setup), then run hostkeeper setup again");
        plan.refusals.push_back(std::move(refusal));
    }
    if (ours.size() > 1) {
        plan.refusals.push_back(tool + ": more than one credentials_helper block (" + ours[0] +
                                ", " + ours[1] + "); " + tool + " refuses that: keep one");
    }
    if (!others.empty() || ours.size() > 1) return;
    if (ours.size() == 1) {
        plan.notes.push_back(tool + ": " + ours[0] + " is already there");
        return;
    }
    const fs::path file = paths.cli_config;
    const std::string what = "credentials_helper \"" + std::string(terraform_config::kHelperLabel) +
                             "\" {} to " + file.string();
    plan.steps.push_back({tool + ": would add " + what, tool + ": added " + what, [file] {
                              const auto text = proto::read_file_if_exists(file);
                              std::string inserted = kBlockText;
                              if (text && !text->empty())
                                  inserted = (text->back() == '\n' ? "\n" : "\n\n") + inserted;
                              if (!text && file.has_parent_path())
                                  fs::create_directories(file.parent_path());
                              proto::write_file_atomically(file, text.value_or("") + inserted,
                                                           proto::mode_or(file, 0600));
                              return Json{{"action", "config_block"},
                                          {"file", file.string()},
                                          {"inserted", inserted},
                                          {"created", !text.has_value()}};
                          }});
}

// A hostkeeperd the helper started on demand at the socket's path (while the
// socket unit was off or failed) would be left running, unreachable, once
// systemd binds the path: stop it first. Quiet when none answers.
void stop_on_demand_daemon() {
    client::ClientOptions options;
    options.start_daemon = false;
    options.timeout = std::chrono::seconds(5);
    try {
        client::DaemonClient(options).stop();
    } catch (const std::exception&) {
        // Nothing answers: nothing to stop.
    }
}

// Starts hostkeeperd.service now, as the first client would, and fails with
// systemd's reason and the fix when it does not start: an enabled socket
// whose service cannot start is no set-up.
void plan_service_check(Plan& plan) {
    plan.steps.push_back(
        {std::string("systemd: would check that ") + client::kServiceUnit + " starts",
         std::string("systemd: ") + client::kServiceUnit + " starts", [] {
             if (systemctl_user({"start", client::kServiceUnit}, true) == 0) return Json();
             const auto units = client::query_units();
             const auto problem = units ? client::unit_problem(*units) : std::nullopt;
             if (problem) throw std::runtime_error(problem->what + "; fix: " + problem->fix);
             throw std::runtime_error(std::string(client::kServiceUnit) +
                                      " does not start; 'systemctl --user status " +
                                      client::kServiceUnit + "' says why");
         }});
}

// Enabled but not listening (e.g. after the package was reinstalled): the
// helper would start hostkeeperd on demand, outside the unit's sandbox.
void plan_socket_start(Plan& plan, const std::string& state) {
    plan.steps.push_back({std::string("systemd: ") + client::kSocketUnit + " is enabled but " +
                              state + "; would start it",
                          std::string("systemd: ") + client::kSocketUnit + " was enabled but " +
                              state + "; started it",
                          [] {
                              stop_on_demand_daemon();
                              if (systemctl_user({"start", client::kSocketUnit}) != 0) {
                                  throw std::runtime_error(std::string("systemctl --user start ") +
                                                           client::kSocketUnit + " failed");
                              }
                              return Json();
                          }});
    plan_service_check(plan);
}

void plan_socket(Plan& plan) {
    if (!client::user_manager_running()) {
        plan.notes.push_back(
            "systemd: no user manager is running; the helper starts hostkeeperd on demand");
        return;
    }
    if (systemctl_user({"is-enabled", "--quiet", client::kSocketUnit}, true) == 0) {
        const auto units = client::query_units();
        const auto problem = units ? client::unit_problem(*units) : std::nullopt;
        if (!problem && units && units->socket.active_state == "active") {
            plan.notes.push_back(std::string("systemd: ") + client::kSocketUnit +
                                 " is already enabled and listening");
            return;
        }
        if (!problem) {
            plan_socket_start(plan, units ? units->socket.active_state : "in an unknown state");
            return;
        }
        // Enabled, but failed (e.g. start-limit-hit): the helper would start
        // hostkeeperd on demand behind the user's back. Reset and retry it.
        plan.steps.push_back(
            {"systemd: " + problem->what + "; would reset it and start " + client::kSocketUnit +
                 " again",
             std::string("systemd: reset and started ") + client::kSocketUnit + " again", [] {
                 stop_on_demand_daemon();
                 systemctl_user({"reset-failed", client::kSocketUnit, client::kServiceUnit}, true);
                 if (systemctl_user({"restart", client::kSocketUnit}) != 0) {
                     throw std::runtime_error(std::string("systemctl --user restart ") +
                                              client::kSocketUnit + " failed");
                 }
                 return Json();
             }});
        plan_service_check(plan);
        return;
    }
    plan.steps.push_back({std::string("systemd: would enable and start ") + client::kSocketUnit,
                          std::string("systemd: enabled and started ") + client::kSocketUnit, [] {
                              stop_on_demand_daemon();
                              if (systemctl_user({"enable", "--now", client::kSocketUnit}) != 0) {
                                  throw std::runtime_error(
                                      std::string("systemctl --user enable --now ") +
                                      client::kSocketUnit + " failed");
                              }
                              return Json{{"action", "enable_socket"}};
                          }});
    plan_service_check(plan);
}

std::vector<terraform_config::ToolPaths> selected_tools(const SetupOptions& options, Plan& plan) {
    std::vector<terraform_config::ToolPaths> tools;
    const bool any = options.terraform || options.opentofu;
    for (const terraform_config::Tool tool :
         {terraform_config::Tool::terraform, terraform_config::Tool::opentofu}) {
        const bool asked =
            tool == terraform_config::Tool::terraform ? options.terraform : options.opentofu;
        terraform_config::ToolPaths paths = terraform_config::locate(tool);
        // A relative TF_CLI_CONFIG_FILE is relative to where the tool runs;
        // setup and its record (for --undo) need where it is now.
        if (paths.cli_config.is_relative()) paths.cli_config = fs::absolute(paths.cli_config);
        if (asked || (!any && tool_present(paths))) tools.push_back(std::move(paths));
    }
    if (tools.empty()) {
        plan.notes.push_back(
            "neither Terraform nor OpenTofu was found (no CLI configuration, no ~/.terraform.d, "
            "not on PATH); "
            "use --terraform or --opentofu to set one up anyway");
    }
    return tools;
}

// OpenTofu uses ~/.terraform.d once it exists, and its XDG directory only
// while it does not: creating it (for a plugin link) would strand the tokens
// in OpenTofu's XDG credentials.tfrc.json. Refuse until they are imported.
void guard_opentofu_directory(Plan& plan, const std::vector<terraform_config::ToolPaths>& tools) {
    const fs::path dot =
        terraform_config::locate(terraform_config::Tool::terraform).config_dir;  // ~/.terraform.d
    const terraform_config::ToolPaths tofu =
        terraform_config::locate(terraform_config::Tool::opentofu);
    std::error_code ec;
    if (fs::exists(dot, ec) || tofu.config_dir == dot || !fs::exists(tofu.credentials_json, ec))
        return;
    for (const auto& paths : tools) {
        for (const auto& dir : paths.plugin_dirs) {
            if (dir.string().rfind(dot.string() + "/", 0) != 0) continue;
            plan.refusals.push_back("creating " + dot.string() +
                                    " would make OpenTofu read its credentials there instead of " +
                                    tofu.config_dir.string() + ", and " +
                                    tofu.credentials_json.string() +
                                    " holds tokens: run 'hostkeeper import' first (it moves them "
                                    "into the keyring), then "
                                    "hostkeeper setup again");
            return;
        }
    }
}

int setup(const SetupOptions& options, const client::ClientOptions& client) {
    Plan plan;
    const fs::path helper = terraform_config::installed_helper();
    const std::vector<terraform_config::ToolPaths> tools = selected_tools(options, plan);
    for (const auto& paths : tools) {
        for (const auto& dir : paths.plugin_dirs) plan_link(plan, paths.name, dir, helper);
        plan_block(plan, paths);
    }
    guard_opentofu_directory(plan, tools);
    plan_socket(plan);
    if (options.registry_cache) plan_registry_cache(plan, tools, options.registry_hosts, client);
    if (options.git) plan_git(plan);
    if (options.docker) plan_containers(plan);
    // Notes and refusals quote paths and the registries of the user's files.
    if (!plan.refusals.empty()) {
        for (const auto& refusal : plan.refusals)
            client::print_printable(stderr, "hostkeeper setup: %s\n", refusal.c_str());
        std::fprintf(stderr, "hostkeeper setup: nothing was changed\n");
        return client::kExitFailed;
    }
    for (const auto& note : plan.notes) client::print_printable(stdout, "%s\n", note.c_str());
    const auto finish = [&] {
        return options.registry_cache
                   ? sync_registry_cache(client, options.registry_hosts, options.dry_run)
                   : client::kExitOk;
    };
    if (plan.steps.empty()) {
        std::printf("nothing to change\n");
        return finish();
    }
    Json state = options.dry_run ? Json() : load_state();
    for (const auto& step : plan.steps) {
        if (options.dry_run) {
            std::printf("%s\n", step.would.c_str());
            continue;
        }
        Json record = step.apply();
        if (!record.is_null()) {
            state["actions"].push_back(std::move(record));
            save_state(state);  // after every step: a later failure still leaves an exact record
        }
        std::printf("%s\n", step.done.c_str());
    }
    const int status = finish();
    if (options.dry_run) std::printf("dry run: nothing was changed\n");
    return status;
}

// Reverses one record; returns what happened, for the user.
std::string undo_one(const Json& action, bool dry_run, const client::ClientOptions& client) {
    if (is_registry_cache_record(action)) return undo_registry_cache(action, dry_run, client);
    if (is_git_record(action)) return undo_git(action, dry_run);
    if (is_containers_record(action)) return undo_containers(action, dry_run);
    const std::string kind = action.value("action", "");
    const auto say = [dry_run](const std::string& would, const std::string& did) {
        return dry_run ? "would " + would : did;
    };
    if (kind == "link") {
        const fs::path link = action.value("path", "");
        const fs::path target = action.value("target", "");
        const std::string replaced =
            action["replaced"].is_string() ? action["replaced"].get<std::string>() : "";
        if (!links_to(link, target))
            return "left " + link.string() + " alone: it no longer links to " + target.string();
        if (!dry_run) {
            fs::remove(link);
            if (!replaced.empty()) fs::create_symlink(replaced, link);
        }
        return replaced.empty() ? say("remove ", "removed ") + link.string()
                                : say("restore ", "restored ") + link.string() + " -> " + replaced;
    }
    if (kind == "config_block") {
        const fs::path file = action.value("file", "");
        const std::string inserted = action.value("inserted", "");
        const auto text = proto::read_file_if_exists(file);
        const auto at = text ? text->rfind(inserted) : std::string::npos;
        if (inserted.empty() || at == std::string::npos) {
            return "left " + file.string() +
                   " alone: the block setup added is no longer there as it was";
        }
        std::string rest = *text;
        rest.erase(at, inserted.size());
        const bool remove = action.value("created", false) && rest.empty();
        if (!dry_run) {
            if (remove) {
                proto::remove_file(file);
            } else {
                proto::write_file_atomically(file, rest, proto::mode_or(file, 0600));
            }
        }
        return remove ? say("remove ", "removed ") + file.string() + " (setup created it)"
                      : say("remove ", "removed ") +
                            "the credentials_helper block setup added to " + file.string();
    }
    if (kind == "enable_socket") {
        if (!client::user_manager_running())
            return std::string("left ") + client::kSocketUnit +
                   " alone: no systemd user manager runs";
        if (!dry_run && systemctl_user({"disable", "--now", client::kSocketUnit}) != 0) {
            throw std::runtime_error(std::string("systemctl --user disable --now ") +
                                     client::kSocketUnit + " failed");
        }
        return say("disable and stop ", "disabled and stopped ") + client::kSocketUnit;
    }
    return "skipped an unknown record \"" + kind + "\"";
}

// Every token of `listed` (list's answer); nothing is written until all are read.
std::vector<terraform_config::HostToken> read_stored_tokens(const client::ClientOptions& client,
                                                            const Json& listed) {
    std::vector<terraform_config::HostToken> tokens;
    for (const auto& host : listed_hosts(listed)) {
        auto token = fetch_token(client, host);
        if (token) tokens.push_back({host, std::move(*token)});  // else forgotten meanwhile
    }
    return tokens;
}

// The written tokens that expire: in the file nothing renews them.
void tell_expiries(const Json& listed, const std::vector<std::string>& written) {
    const auto hosts = listed.find("hosts");
    if (hosts == listed.end() || !hosts->is_array()) return;
    for (const Json& entry : *hosts) {
        if (!entry.is_object()) continue;
        const std::string host = text_of(entry, "host", "");
        const std::string at = text_of(entry, "expires_at", "");
        if (at.empty() || std::find(written.begin(), written.end(), host) == written.end())
            continue;
        const long long left = entry.value("expires_in_s", 0LL);
        const std::string when =
            left > 0 ? "in " + client::duration_text(left) : std::string("already expired");
        // A hostkeeper login token lives minutes: hostkeeperd refreshes it,
        // which nothing does in the file.
        const bool refreshed =
            text_of(entry, "renew_command", "").rfind("hostkeeper login ", 0) == 0;
        const std::string why = refreshed ? "hostkeeperd refreshed it (hostkeeper login); " : "";
        client::print_printable(stdout,
                                "note: the token of %s expires at %s (%s); %sin the file "
                                "nothing renews it: then run terraform login %s\n",
                                host.c_str(), at.c_str(), when.c_str(), why.c_str(), host.c_str());
    }
}

// --restore-tokens: the stored tokens into Terraform's credentials.tfrc.json,
// before the helper is taken away. The only place hostkeeper writes a token
// to disk, at the user's explicit request. kExitOk, or the failure's exit
// code with nothing changed.
int restore_tokens(bool dry_run, const client::ClientOptions& client) {
    std::vector<terraform_config::HostToken> tokens;
    Json listed;
    try {
        listed = list_answer(client);
        tokens = read_stored_tokens(client, listed);
    } catch (const proto::Error& e) {
        std::fprintf(stderr,
                     "hostkeeper setup: cannot read the stored tokens: %s; nothing was changed "
                     "(unlock the keyring with 'hostkeeper unlock', then run this again)\n",
                     e.what());
        return client::exit_code_for(e.code());
    }
    const fs::path file =
        terraform_config::locate(terraform_config::Tool::terraform).credentials_json;
    if (tokens.empty()) {
        std::printf("no tokens are stored in the keyring: nothing to write to %s\n", file.c_str());
        return client::kExitOk;
    }
    std::string hosts;
    for (const auto& token : tokens) hosts += (hosts.empty() ? "" : ", ") + token.host;
    std::printf(
        "%s the tokens of %s to %s: a PLAINTEXT file (mode 0600) Terraform reads "
        "without the helper; 'hostkeeper import' moves them back into the keyring\n",
        dry_run ? "would write" : "writing", hosts.c_str(), file.c_str());
    if (dry_run) return client::kExitOk;
    const auto result = terraform_config::add_tokens_to_credentials_file(file, tokens);
    for (const auto& host : result.kept) {
        std::printf("kept the entry %s already had for %s (not overwritten)\n", file.c_str(),
                    host.c_str());
    }
    std::printf("wrote %zu token(s) to %s\n", result.written.size(), file.c_str());
    tell_expiries(listed, result.written);
    return client::kExitOk;
}

int undo(const SetupOptions& options, const client::ClientOptions& client) {
    if (options.restore_tokens) {
        const int status = restore_tokens(options.dry_run, client);
        if (status != client::kExitOk) return status;
    }
    Json state = load_state();
    auto& actions = state["actions"];
    // --registry-cache, --git and --docker with --undo: only their records.
    const bool all = !options.registry_cache && !options.git && !options.docker;
    const auto selected = [&](const Json& action) {
        return all || (options.registry_cache && is_registry_cache_record(action)) ||
               (options.git && is_git_record(action)) ||
               (options.docker && is_containers_record(action));
    };
    if (std::none_of(actions.begin(), actions.end(), selected)) {
        std::string what = "changes";
        if (!all) {
            what = options.registry_cache ? "registry cache changes" : "";
            if (options.git) what += std::string(what.empty() ? "" : " or ") + "git changes";
            if (options.docker) what += std::string(what.empty() ? "" : " or ") + "podman changes";
        }
        std::printf("nothing to undo: hostkeeper setup has no record of %s (%s)\n", what.c_str(),
                    state_path().c_str());
        return client::kExitOk;
    }
    for (std::size_t i = actions.size(); i-- > 0;) {
        if (!selected(actions[i])) continue;
        std::printf("%s\n", undo_one(actions[i], options.dry_run, client).c_str());
        actions.erase(i);
        if (!options.dry_run) save_state(state);
    }
    if (options.dry_run) std::printf("dry run: nothing was changed\n");
    return client::kExitOk;
}

}  // namespace

int run_setup(const SetupOptions& options, const client::ClientOptions& client) {
    if (options.restore_tokens && !options.undo) {
        std::fprintf(stderr, "hostkeeper setup: --restore-tokens goes with --undo\n");
        return client::kExitUsage;
    }
    return options.undo ? undo(options, client) : setup(options, client);
}

namespace {

class SetupCommand final : public Command {
  public:
    CLI::App* add_to(CLI::App& app) override {
        auto* cmd = app.add_subcommand(
            "setup",
            "make Terraform and OpenTofu use the helper: link it, add the credentials_helper "
            "block, enable the socket unit");
        cmd->add_flag("--terraform", options_.terraform,
                      "set up Terraform (default: each tool that is found)");
        cmd->add_flag("--opentofu", options_.opentofu,
                      "set up OpenTofu (default: each tool that is found)");
        cmd->add_flag("--dry-run", options_.dry_run, "only print what would change");
        cmd->add_flag("--undo", options_.undo,
                      "reverse what setup changed (recorded in $XDG_STATE_HOME/hostkeeper); "
                      "with --registry-cache, --git or --docker, only those");
        cmd->add_flag("--restore-tokens", options_.restore_tokens,
                      "with --undo: first write every stored token into Terraform's "
                      "credentials.tfrc.json (plaintext), so Terraform works without the helper");
        cmd->add_flag("--registry-cache", options_.registry_cache,
                      "also route Terraform's and OpenTofu's registry requests through "
                      "hostkeeperd's cache (a loopback listener and host blocks)");
        cmd->add_flag("--git", options_.git,
                      "also make git ask git-credential-hostkeeper (credential.helper in the "
                      "global git configuration) for https hosts");
        cmd->add_flag("--docker", options_.docker,
                      "also make Podman, Buildah and Skopeo store registry logins through "
                      "docker-credential-hostkeeper (credential-helpers in "
                      "~/.config/containers/registries.conf.d), never in an auth.json");
        cmd->add_option("hosts", options_.registry_hosts,
                        "with --registry-cache: registry hosts to route now (others are "
                        "learned as Terraform asks the helper about them)");
        return cmd;
    }
    int run(const client::ClientOptions& client) override {
        if (!options_.registry_hosts.empty() && (!options_.registry_cache || options_.undo)) {
            std::fprintf(stderr,
                         "hostkeeper setup: HOST arguments go with --registry-cache, without "
                         "--undo\n");
            return client::kExitUsage;
        }
        return run_setup(options_, client);
    }

  private:
    SetupOptions options_;
};

}  // namespace

std::unique_ptr<Command> setup_command() {
    return std::make_unique<SetupCommand>();
}

}  // namespace hostkeeper::helper::cli
