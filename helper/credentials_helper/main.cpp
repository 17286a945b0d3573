// terraform-credentials-hostkeeper: the credentials helper Terraform and
// OpenTofu run as `[OPTIONS...] get|store|forget HOSTNAME`
// (docs/specs/credentials-helper-protocol.md). One request to hostkeeperd,
// the exact stdout/stderr/exit rules out.

#include <unistd.h>

#include <cstdio>
#include <exception>
#include <string>
#include <vector>

#include "helper/client/daemon_client.hpp"
#include "helper/client/exit_codes.hpp"
#include "helper/client/helper_arguments.hpp"
#include "helper/client/run_reporting.hpp"
#include "helper/client/standard_streams.hpp"
#include "helper/client/terminal_notice.hpp"
#include "proto/error.hpp"
#include "proto/hostname.hpp"
#include "proto/messages.hpp"
#include "proto/secret.hpp"
#include "proto/version.hpp"

namespace {
using namespace hostkeeper;
using namespace hostkeeper::helper;
using proto::Error;
using proto::ErrorCode;
using proto::Json;

int run(const std::string& verb, const std::string& host,
        const helper::client::ClientOptions& options) {
    const proto::Op op = *proto::op_from_string(verb);
    Json request = proto::make_request(op);
    const proto::ScrubGuard request_guard(request);
    request["host"] = proto::normalize_hostname(host);
    if (op == proto::Op::store) {
        std::string input = helper::client::read_all_input(
            STDIN_FILENO, helper::client::kMaxHelperInput,
            "the credentials on standard input are over 64 KiB; nothing was stored");
        const proto::ScrubGuard input_guard(input);
        try {
            request["credentials"] = proto::parse_credentials(input);
        } catch (const Error& e) {
            throw Error(e.code(), std::string(e.what()) + "; nothing was stored");
        }
    }

    helper::client::DaemonClient daemon(options);
    Json response = daemon.call(request);
    const proto::ScrubGuard response_guard(response);
    if (op == proto::Op::get) {
        const auto credentials = response.find("credentials");
        std::string out =
            credentials != response.end() && credentials->is_object() ? credentials->dump() : "{}";
        out += '\n';
        const proto::ScrubGuard out_guard(out);
        helper::client::write_all_output(STDOUT_FILENO, out);
        // A withheld token (refused, expired) answers as none, so that
        // `terraform login` works again; the terminal says why.
        if (const auto withheld = response.find("withheld");
            withheld != response.end() && withheld->is_object()) {
            helper::client::tell_terminal(helper::client::terminal_notice_line(
                host, withheld->value("message", "the stored token is withheld")));
        }
    }
    return helper::client::kExitOk;
}

// A failed `get` is only logged by Terraform (at TF_LOG=WARN), which then goes
// on without credentials: the reason also goes to the user's terminal.
void tell_terminal_why_get_failed(const std::string& verb, const std::string& host,
                                  const char* reason) noexcept {
    if (verb == "get") {
        try {
            helper::client::tell_terminal(helper::client::terminal_notice_line(host, reason));
        } catch (...) {  // std::bad_alloc building the line: stderr still says it
        }
    }
}

}  // namespace

int main(int argc, char** argv) {
    const std::string program = "terraform-credentials-hostkeeper";
    // Not CLI11: see helper_arguments.hpp.
    const helper::client::HelperArguments args =
        helper::client::parse_helper_arguments(std::vector<std::string>(argv + 1, argv + argc));
    switch (args.action) {
        case helper::client::HelperArguments::Action::help:
            std::fputs(helper::client::helper_help(), stdout);
            return helper::client::kExitOk;
        case helper::client::HelperArguments::Action::version:
            std::printf("%s %s\n", program.c_str(), proto::product_version());
            return helper::client::kExitOk;
        case helper::client::HelperArguments::Action::usage:
            std::fprintf(stderr, "%s\n%s", args.error.c_str(), helper::client::helper_usage_hint());
            return helper::client::kExitUsage;
        case helper::client::HelperArguments::Action::run:
            break;
    }

    return helper::client::run_reporting(program, [&] {
        try {
            return run(args.verb, args.host,
                       helper::client::make_client_options(args.socket, args.timeout_seconds));
        } catch (const Error& e) {
            tell_terminal_why_get_failed(args.verb, args.host, e.what());
            if (e.code() == ErrorCode::bad_host) {
                std::fprintf(
                    stderr,
                    "usage: %s [--socket=PATH] [--timeout=SECONDS] get|store|forget HOSTNAME\n",
                    program.c_str());
            }
            throw;
        } catch (const std::exception& e) {
            tell_terminal_why_get_failed(args.verb, args.host, e.what());
            throw;
        }
    });
}
