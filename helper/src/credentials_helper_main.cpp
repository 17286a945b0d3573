// terraform-credentials-hostkeeper: the credentials helper Terraform and
// OpenTofu run as `[OPTIONS...] get|store|forget HOSTNAME`
// (docs/specs/credentials-helper-protocol.md). One request to hostkeeperd,
// the exact stdout/stderr/exit rules out.

#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <string>
#include <vector>

#include "daemon_client.hpp"
#include "exit_codes.hpp"
#include "helper_arguments.hpp"
#include "hostkeeper/proto/error.hpp"
#include "hostkeeper/proto/hostname.hpp"
#include "hostkeeper/proto/messages.hpp"
#include "hostkeeper/proto/secret.hpp"
#include "hostkeeper/proto/version.hpp"
#include "run_reporting.hpp"

namespace {
using namespace hostkeeper;
using proto::Error;
using proto::ErrorCode;
using proto::Json;

constexpr std::size_t kMaxInput = std::size_t{64} * 1024;

// Standard input to EOF, at most kMaxInput bytes.
std::string read_stdin() {
    std::string input(kMaxInput + 1, '\0');
    std::size_t size = 0;
    while (size < input.size()) {
        const ssize_t n = ::read(STDIN_FILENO, input.data() + size, input.size() - size);
        if (n == 0) break;
        if (n < 0) {
            if (errno == EINTR) continue;
            proto::scrub(input);
            throw Error(ErrorCode::bad_request, std::string("cannot read standard input: ") + std::strerror(errno));
        }
        size += static_cast<std::size_t>(n);
    }
    if (size > kMaxInput) {
        proto::scrub(input);
        throw Error(ErrorCode::too_large, "the credentials on standard input are over 64 KiB; nothing was stored");
    }
    input.resize(size);
    return input;
}

void write_stdout(const std::string& text) {
    std::size_t done = 0;
    while (done < text.size()) {
        const ssize_t n = ::write(STDOUT_FILENO, text.data() + done, text.size() - done);
        if (n < 0 && errno == EINTR) continue;
        if (n <= 0) throw Error(ErrorCode::internal, std::string("cannot write standard output: ") + std::strerror(errno));
        done += static_cast<std::size_t>(n);
    }
}

int run(const std::string& verb, const std::string& host, const client::ClientOptions& options) {
    const proto::Op op = *proto::op_from_string(verb);
    Json request = proto::make_request(op);
    const proto::ScrubGuard request_guard(request);
    request["host"] = proto::normalize_hostname(host);
    if (op == proto::Op::store) {
        std::string input = read_stdin();
        const proto::ScrubGuard input_guard(input);
        try {
            request["credentials"] = proto::parse_credentials(input);
        } catch (const Error& e) {
            throw Error(e.code(), std::string(e.what()) + "; nothing was stored");
        }
    }

    client::DaemonClient daemon(options);
    Json response = daemon.call(request);
    const proto::ScrubGuard response_guard(response);
    if (op == proto::Op::get) {
        const auto credentials = response.find("credentials");
        std::string out = credentials != response.end() && credentials->is_object() ? credentials->dump() : "{}";
        out += '\n';
        const proto::ScrubGuard out_guard(out);
        write_stdout(out);
    }
    return client::kExitOk;
}

}  // namespace

int main(int argc, char** argv) {
    const std::string program = "terraform-credentials-hostkeeper";
    // Not CLI11: see helper_arguments.hpp.
    const client::HelperArguments args =
        client::parse_helper_arguments(std::vector<std::string>(argv + 1, argv + argc));
    switch (args.action) {
        case client::HelperArguments::Action::help:
            std::fputs(client::helper_help(), stdout);
            return client::kExitOk;
        case client::HelperArguments::Action::version:
            std::printf("%s %s\n", program.c_str(), proto::product_version());
            return client::kExitOk;
        case client::HelperArguments::Action::usage:
            std::fprintf(stderr, "%s\n%s", args.error.c_str(), client::helper_usage_hint());
            return client::kExitUsage;
        case client::HelperArguments::Action::run:
            break;
    }

    return client::run_reporting(program, [&] {
        try {
            return run(args.verb, args.host,
                       client::make_client_options(args.socket, args.timeout_seconds));
        } catch (const Error& e) {
            if (e.code() == ErrorCode::bad_host) {
                std::fprintf(stderr, "usage: %s [--socket=PATH] [--timeout=SECONDS] get|store|forget HOSTNAME\n",
                             program.c_str());
            }
            throw;
        }
    });
}
