#include "helper/cli/check.hpp"

#include <cstdio>

#include "helper/cli/command.hpp"
#include "helper/cli/list.hpp"
#include "helper/client/exit_codes.hpp"
#include "helper/client/printable_output.hpp"
#include "proto/error.hpp"
#include "proto/hostname.hpp"

namespace hostkeeper::helper::cli {
namespace {
using proto::ErrorCode;
using proto::Json;

// Errors that say nothing can be checked at all: reported once, not per host.
bool whole_call_failed(ErrorCode code) {
    switch (code) {
        case ErrorCode::unknown_op:
        case ErrorCode::unsupported_version:
        case ErrorCode::forbidden:
        case ErrorCode::busy:
        case ErrorCode::config_error:
        case ErrorCode::bad_request:
            return true;
        default:
            return false;
    }
}

std::string http_from(const Json& answer) {
    std::string text;
    if (const auto status = answer.find("status");
        status != answer.end() && status->is_number_integer()) {
        text = "HTTP " + std::to_string(status->get<int>());
    }
    if (const auto url = answer.find("url"); url != answer.end() && url->is_string())
        text += (text.empty() ? "" : " from ") + url->get<std::string>();
    return text;
}

}  // namespace

Json check_host(const client::ClientOptions& client, const std::string& host) {
    Json request = proto::make_request(proto::Op::check);
    request["host"] = host;
    try {
        Json answer = client::DaemonClient(client).call(request);
        answer.erase("v");
        answer.erase("ok");
        if (!answer.contains("host")) answer["host"] = host;
        return answer;
    } catch (const proto::Error& e) {
        if (whole_call_failed(e.code())) throw;
        return Json{{"host", host},
                    {"result", "failed"},
                    {"error", std::string(proto::to_string(e.code()))},
                    {"message", e.what()}};
    }
}

CheckLine check_line(const Json& answer) {
    const std::string host = answer.value("host", "?");
    const std::string who = host_for_people(host);
    const std::string result = answer.value("result", "");
    const std::string http = http_from(answer);
    if (result == "valid") {
        std::string text = who + ": valid (user " + answer.value("user", "?") + ")";
        if (answer.contains("learned_expires_at"))
            text +=
                "; expires " + answer.value("learned_expires_at", "?") + " (from the host's API)";
        if (answer.contains("expiry_note")) text += "; " + answer.value("expiry_note", "");
        return {Verdict::good, text};
    }
    if (result == "accepted") {
        return {Verdict::good,
                who + ": accepted (" + http + "): the host has no tfe.v2 to say whose token it is"};
    }
    if (result == "unchecked") {
        return {Verdict::unchecked,
                who + ": not checked (" + http +
                    "): the host serves no Terraform discovery document to its token (a host "
                    "of git repositories or images may not); the token is still given out"};
    }
    if (result == "rejected" && http.empty()) {
        // Not sent at all: past its stored expires_at (the message says so).
        return {Verdict::rejected, who + ": rejected: " + answer.value("message", "expired")};
    }
    if (result == "rejected") {
        return {Verdict::rejected, who + ": rejected (" + http +
                                       "): expired or revoked: run terraform login " +
                                       proto::display_hostname(host)};
    }
    if (result == "no_credentials") return {Verdict::absent, who + ": no credentials stored"};
    std::string why = answer.value("message", "");
    if (why.empty()) why = result.empty() ? "the daemon gave no result" : "result " + result;
    return {Verdict::failed, who + ": failed: " + why};
}

int run_check(const client::ClientOptions& client, const std::vector<std::string>& hosts,
              bool json) {
    std::vector<std::string> targets;
    targets.reserve(hosts.size());
    for (const auto& host : hosts) targets.push_back(proto::normalize_hostname(host));
    if (hosts.empty()) targets = listed_hosts(list_answer(client));

    Json results = Json::array();
    bool rejected = false;
    bool failed = false;
    for (const auto& host : targets) {
        Json answer = check_host(client, host);
        answer["display"] = proto::display_hostname(host);
        const CheckLine line = check_line(answer);
        rejected = rejected || line.verdict == Verdict::rejected;
        failed = failed || line.verdict == Verdict::failed;
        if (!json) client::print_printable(stdout, "%s\n", line.text.c_str());
        results.push_back(std::move(answer));
    }
    if (json) {
        client::print_printable(stdout, "%s\n", Json{{"results", results}}.dump(2).c_str());
    } else if (targets.empty()) {
        client::print_printable(stdout, "no credentials stored: nothing to check\n");
    }
    if (rejected) return client::kExitRejected;
    if (failed) return client::kExitFailed;
    return client::kExitOk;
}

namespace {

class CheckCommand final : public Command {
  public:
    CLI::App* add_to(CLI::App& app) override {
        auto* cmd = app.add_subcommand(
            "check",
            "is each stored token still good? ask each host (or those named) with its token: "
            "valid, rejected, accepted, not checked, no credentials or failed");
        cmd->add_option("hosts", hosts_, "registry hostnames (default: every stored host)");
        cmd->add_flag("--json", json_, "print the daemon's answers as JSON");
        cmd->footer(
            "Exit status: 0 no host rejected its token and none failed; 7 a host rejected its "
            "token (expired or revoked); 1 a host could not be checked, or the daemon failed.");
        return cmd;
    }
    int run(const client::ClientOptions& client) override {
        return run_check(client, hosts_, json_);
    }

  private:
    std::vector<std::string> hosts_;
    bool json_ = false;
};

}  // namespace

std::unique_ptr<Command> check_command() {
    return std::make_unique<CheckCommand>();
}

}  // namespace hostkeeper::helper::cli
