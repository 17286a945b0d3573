#include "helper/cli/rotate.hpp"

#include <cstdio>

#include "helper/cli/command.hpp"
#include "helper/cli/list.hpp"
#include "helper/client/exit_codes.hpp"
#include "helper/client/printable_output.hpp"
#include "proto/hostname.hpp"
#include "proto/messages.hpp"

namespace hostkeeper::helper::cli {
using proto::Json;

RotateOutcome rotate_outcome(const Json& answer) {
    const std::string host = answer.value("host", "?");
    const std::string who = host_for_people(host);
    if (answer.value("result", "") == "rotated") {
        std::string text = who + ": rotated: new token " + answer.value("token_id", "?") +
                           ", expires " + answer.value("expires_at", "?");
        const std::string revoked = answer.value("revoked", "");
        text += revoked.empty() ? "; the previous token was not made by hostkeeper, so it stays"
                                : "; previous token " + revoked + " revoked";
        if (const std::string warning = answer.value("warning", ""); !warning.empty())
            text += "\nwarning: " + warning;
        return {client::kExitOk, text};
    }
    const std::string step = answer.value("step", "");
    const std::string why = answer.value("message", "the daemon gave no reason");
    RotateOutcome out{client::kExitFailed, who + ": not rotated (" + step + "): " + why};
    const auto status = answer.find("status");
    const bool refused = step == "account" && status != answer.end() &&
                         status->is_number_integer() &&
                         (status->get<int>() == 401 || status->get<int>() == 403);
    if (step == "credentials" || step == "service") {
        out.exit_code = client::kExitNotFound;
    } else if (refused) {
        out.exit_code = client::kExitRejected;
    }
    return out;
}

int run_rotate(const client::ClientOptions& client, const std::string& host, bool json) {
    Json request = proto::make_request(proto::Op::rotate);
    request["host"] = proto::normalize_hostname(host);
    Json answer = client::DaemonClient(client).call(request);
    answer.erase("v");
    answer.erase("ok");
    const RotateOutcome outcome = rotate_outcome(answer);
    if (json) {
        client::print_printable(stdout, "%s\n", answer.dump(2).c_str());
    } else {
        client::print_printable(stdout, "%s\n", outcome.text.c_str());
    }
    return outcome.exit_code;
}

namespace {

class RotateCommand final : public Command {
  public:
    CLI::App* add_to(CLI::App& app) override {
        auto* cmd = app.add_subcommand(
            "rotate",
            "replace the stored HCP Terraform / Terraform Enterprise user token of HOST with a "
            "new one made with it; revoke the previous one when hostkeeper made it");
        cmd->add_option("host", host_, "the host (its tfe.v2 API)")->required();
        cmd->add_flag("--json", json_, "print the daemon's answer as JSON");
        cmd->footer(
            "Exit status: 0 rotated; 3 no token is stored for HOST, or HOST offers no tfe.v2; "
            "7 HOST refused the stored token (run terraform login HOST); 1 the rotation failed "
            "and the stored token was left in place, or the daemon failed.");
        return cmd;
    }
    int run(const client::ClientOptions& client) override {
        return run_rotate(client, host_, json_);
    }

  private:
    std::string host_;
    bool json_ = false;
};

}  // namespace

std::unique_ptr<Command> rotate_command() {
    return std::make_unique<RotateCommand>();
}

}  // namespace hostkeeper::helper::cli
