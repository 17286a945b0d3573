#include "helper/cli/list.hpp"

#include <cstdio>

#include "helper/cli/answer_text.hpp"
#include "helper/cli/command.hpp"
#include "helper/client/common_cli.hpp"
#include "helper/client/exit_codes.hpp"
#include "helper/client/printable_output.hpp"
#include "helper/terraform_config/shadowing.hpp"
#include "helper/terraform_config/token_variables.hpp"
#include "proto/hostname.hpp"

namespace hostkeeper::helper::cli {
namespace {
using proto::Json;

const Json& array_of(const Json& object, const char* key) {
    static const Json empty = Json::array();
    const auto it = object.find(key);
    return it != object.end() && it->is_array() ? *it : empty;
}

std::string host_line(const Json& entry, const std::string& backend) {
    std::string line = host_for_people(text_of(entry, "host", "?"));
    line += "  backend " + backend;
    line += ", label \"" + text_of(entry, "label", "?") + "\"";
    line += ", stored " + text_of(entry, "stored", "(unknown)");
    if (const std::string expires = text_of(entry, "expires_at", ""); !expires.empty())
        line += ", expires " + expires;
    if (entry.value("locked", false)) {
        line += ", locked (fields unknown until it is unlocked)";
    } else {
        std::string fields;
        for (const auto& field : array_of(entry, "fields")) {
            if (field.is_string()) fields += (fields.empty() ? "" : " ") + field.get<std::string>();
        }
        line += ", fields: " + (fields.empty() ? std::string("(none)") : fields);
    }
    return line;
}

std::string shadow_line(const Json& shadow) {
    const std::string source = text_of(shadow, "source", "?");
    const std::string where = text_of(shadow, "where", "?");
    // The JSON names from their one definition (a literal compared here was
    // also inlined as code immediates that lintian reads as the word "ment").
    using terraform_config::shadow_source_name;
    using terraform_config::ShadowSource;
    if (source == shadow_source_name(ShadowSource::environment))
        return "  shadowed: " + where + " in the environment wins over the keyring";
    if (source == shadow_source_name(ShadowSource::credentials_block))
        return "  shadowed: the credentials block at " + where + " wins over the keyring";
    return "  shadowed: " + where + " (credentials.tfrc.json) wins over the keyring";
}

}  // namespace

Json list_answer(const client::ClientOptions& client) {
    client::DaemonClient daemon(client);
    return daemon.call(proto::make_request(proto::Op::list));
}

std::vector<std::string> listed_hosts(const Json& answer) {
    std::vector<std::string> hosts;
    for (const auto& entry : array_of(answer, "hosts")) {
        const std::string host = text_of(entry, "host", "");
        if (!host.empty()) hosts.push_back(host);
    }
    return hosts;
}

std::string host_for_people(const std::string& host) {
    const std::string display = proto::display_hostname(host);
    return display == host ? host : display + " (" + host + ")";
}

Json list_document(const Json& answer) {
    std::vector<std::string> errors;
    const auto shadows = terraform_config::shadows(&errors);
    Json document = Json::object();
    document["backend"] = answer.contains("backend") ? answer["backend"] : Json(nullptr);
    Json hosts = Json::array();
    for (const auto& entry : array_of(answer, "hosts")) {
        if (!entry.is_object()) continue;
        Json host = entry;
        const std::string name = text_of(entry, "host", "");
        host["display"] = proto::display_hostname(name);
        const auto variable = terraform_config::encode_token_variable(name);
        host["token_variable"] = variable ? Json(*variable) : Json(nullptr);
        Json shadowed = Json::array();
        if (const auto it = shadows.find(name); it != shadows.end()) {
            for (const auto& shadow : it->second) {
                shadowed.push_back({{"source", terraform_config::shadow_source_name(shadow.source)},
                                    {"where", shadow.where}});
            }
        }
        host["shadowed_by"] = std::move(shadowed);
        hosts.push_back(std::move(host));
    }
    document["hosts"] = std::move(hosts);
    document["docker"] = array_of(answer, "docker");
    document["git"] = array_of(answer, "git");
    document["rejected"] = array_of(answer, "rejected");
    document["commands"] = array_of(answer, "commands");
    document["warnings"] = errors;
    return document;
}

// The items of another kind than Terraform's (Docker, git) under `title`,
// one line each, named by their `key` field.
void item_lines(std::vector<std::string>& lines, const Json& items, const char* title,
                const char* key) {
    if (!items.empty()) lines.emplace_back(title);
    for (const auto& entry : items) {
        lines.push_back("  " + text_of(entry, key, "?") + "  user " +
                        text_of(entry, "username", "?") + ", label \"" +
                        text_of(entry, "label", "?") + "\", stored " +
                        text_of(entry, "stored", "(unknown)"));
    }
}

std::string expiry_warning(const Json& entry) {
    // The stage warned of now and the command that renews the token, as the
    // daemon judges them (a token it renews itself is not warned of while
    // its renewal is on time).
    const std::string stage = text_of(entry, "warning_stage", "later");
    if (stage == "later") return "";
    const std::string host = text_of(entry, "host", "?");
    const std::string at = text_of(entry, "expires_at", "?");
    const std::string renew =
        text_of(entry, "renew_command", "terraform login " + proto::display_hostname(host));
    if (stage == "expired") {
        return "token expired: " + host_for_people(host) + " at " + at +
               " (its expires_at): not handed out; run " + renew;
    }
    long long left = 0;
    if (const auto s = entry.find("expires_in_s"); s != entry.end() && s->is_number_integer())
        left = s->get<long long>();
    return "token expires soon: " + host_for_people(host) + " at " + at + " (in " +
           client::duration_text(left) + "): run " + renew + " before then";
}

// A host whose token comes from its token_command: its state, never the token.
std::string command_line(const Json& entry, const Json& hosts) {
    const std::string host = text_of(entry, "host", "?");
    std::string line =
        "  " + host_for_people(host) + "  runs " + std::to_string(entry.value("runs", 0));
    if (entry.value("running", false)) line += ", running now";
    if (const auto left = entry.find("expires_in_s");
        left != entry.end() && left->is_number_integer() && left->get<long long>() > 0) {
        line += ", token expires in " + client::duration_text(left->get<long long>());
    } else {
        line += ", no token held (the next get runs the command)";
    }
    if (const std::string error = text_of(entry, "last_error", ""); !error.empty())
        line += ", last error: " + error;
    for (const auto& listed : hosts) {
        if (text_of(listed, "host", "") == host) line += "; its keyring item is not used";
    }
    return line;
}

std::vector<std::string> list_lines(const Json& document) {
    std::vector<std::string> lines;
    const std::string backend = text_of(document, "backend", "?");
    const Json& hosts = array_of(document, "hosts");
    if (hosts.empty()) lines.push_back("no credentials stored in the keyring (" + backend + ")");
    for (const auto& entry : hosts) {
        lines.push_back(host_line(entry, backend));
        if (entry.contains("token_variable") && entry["token_variable"].is_null()) {
            lines.push_back(
                "  cannot be encoded as a TF_TOKEN_* variable (hostkeeper exec leaves it out)");
        }
        for (const auto& shadow : array_of(entry, "shadowed_by"))
            lines.push_back(shadow_line(shadow));
        if (const std::string warning = expiry_warning(entry); !warning.empty())
            lines.push_back("  " + warning);
        if (const auto withheld = entry.find("withheld");
            withheld != entry.end() && withheld->is_object() &&
            text_of(*withheld, "reason", "") == "refused") {
            lines.push_back("  not handed out: " + text_of(*withheld, "message", "refused"));
        }
    }
    item_lines(lines, array_of(document, "docker"), "Docker credentials:", "server");
    item_lines(lines, array_of(document, "git"), "git credentials:", "url");
    const Json& commands = array_of(document, "commands");
    if (!commands.empty()) lines.emplace_back("Tokens from a command (token_command):");
    for (const auto& entry : commands) lines.push_back(command_line(entry, hosts));
    const Json& rejected = array_of(document, "rejected");
    if (!rejected.empty()) lines.push_back("Refused their stored token recently:");
    for (const auto& entry : rejected) {
        const std::string host = text_of(entry, "host", "?");
        std::string line = "  " + host_for_people(host) + ": HTTP " +
                           std::to_string(entry.value("status", 0)) + " from " +
                           text_of(entry, "url", "?");
        if (const auto age = entry.find("age_s"); age != entry.end() && age->is_number_integer())
            line += ", " + client::duration_text(age->get<long long>()) + " ago";
        lines.push_back(line + ": not handed out; run terraform login " +
                        proto::display_hostname(host) + ", or hostkeeper check " +
                        proto::display_hostname(host) + " once it is valid again");
    }
    return lines;
}

int run_list(const client::ClientOptions& client, bool json) {
    const Json document = list_document(list_answer(client));
    if (json) {
        client::print_printable(stdout, "%s\n", document.dump(2).c_str());
        return client::kExitOk;
    }
    for (const auto& warning : array_of(document, "warnings"))
        client::print_printable(stderr, "hostkeeper list: %s\n",
                                warning.get<std::string>().c_str());
    for (const auto& line : list_lines(document))
        client::print_printable(stdout, "%s\n", line.c_str());
    return client::kExitOk;
}

namespace {

class ListCommand final : public Command {
  public:
    CLI::App* add_to(CLI::App& app) override {
        auto* cmd = app.add_subcommand(
            "list",
            "every host with stored credentials (read from the keyring): Unicode and ASCII form, "
            "backend, label, when stored, field names (never values), locked, and what shadows "
            "it; and every host whose token comes from a token_command, with its state");
        cmd->add_flag("--json", json_,
                      "print a JSON document (hosts, docker, git, rejected, commands, warnings)");
        return cmd;
    }
    int run(const client::ClientOptions& client) override { return run_list(client, json_); }

  private:
    bool json_ = false;
};

}  // namespace

std::unique_ptr<Command> list_command() {
    return std::make_unique<ListCommand>();
}

}  // namespace hostkeeper::helper::cli
