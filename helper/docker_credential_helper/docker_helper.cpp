#include "helper/docker_credential_helper/docker_helper.hpp"

#include <exception>
#include <optional>

#include "helper/client/printable_output.hpp"
#include "helper/client/standard_streams.hpp"
#include "helper/docker_credential_helper/docker_credentials.hpp"
#include "proto/error.hpp"
#include "proto/messages.hpp"
#include "proto/secret.hpp"
#include "proto/version.hpp"

namespace hostkeeper::helper::docker_credential_helper {
using proto::Error;
using proto::ErrorCode;
using proto::Json;

namespace {

std::string usage() {
    return "Usage: " + std::string(kProgram) + " <store|get|erase|list|version>";
}

// The form of the upstream helpers' version line, "NAME (PACKAGE) VERSION".
std::string version_line() {
    return std::string(kProgram) + " (hostkeeper) " + proto::product_version() + "\n";
}

// The daemon's answer to `request`, scrubbed by the caller.
Json ask(const Json& request, const client::ClientOptions& options) {
    client::DaemonClient daemon(options);
    return daemon.call(request);
}

void store(int in, const client::ClientOptions& options) {
    std::string input = client::read_all_input(
        in, client::kMaxHelperInput,
        "the credentials on standard input are over 64 KiB; nothing was stored");
    const proto::ScrubGuard input_guard(input);
    const DockerCredentials credentials = parse_store_input(input);

    Json request = proto::make_request(proto::Op::docker_store);
    const proto::ScrubGuard request_guard(request);
    request["server"] = credentials.server;
    request["username"] = credentials.username;
    std::string secret(credentials.secret.view());
    request["secret"] = secret;
    proto::scrub(secret);
    // The request must fit in a frame; said here, before any daemon is
    // asked (or started), rather than by the connection.
    try {
        std::string payload = proto::serialize(request);
        proto::scrub(payload);
    } catch (const Error& e) {
        throw Error(e.code(), std::string(e.what()) + "; nothing was stored");
    }
    Json response = ask(request, options);
    proto::scrub(response);
}

std::string read_server(int in) {
    std::string input = client::read_all_input(in, client::kMaxHelperInput,
                                               "the server URL on standard input is over 64 KiB");
    return parse_server_input(input);
}

// The daemon's docker_get answer for `server`, or nullopt for found: false.
std::optional<Json> lookup(const std::string& server, const client::ClientOptions& options) {
    Json request = proto::make_request(proto::Op::docker_get);
    request["server"] = server;
    Json response = ask(request, options);
    const auto found = response.find("found");
    if (found == response.end() || !found->is_boolean()) {
        proto::scrub(response);
        throw Error(ErrorCode::internal,
                    "hostkeeperd's docker_get answer has no boolean \"found\"");
    }
    if (!found->get<bool>()) return std::nullopt;
    return response;
}

void get(int in, int out, const client::ClientOptions& options) {
    const std::string server = read_server(in);
    // The daemon tries the other spelling too (proto::other_docker_server).
    std::optional<Json> response = lookup(server, options);
    if (!response) throw Error(ErrorCode::not_found, std::string(kNotFound));
    const proto::ScrubGuard response_guard(*response);
    // As upstream, ServerURL is the one asked for.
    std::string text =
        format_credentials(server, client::answer_string(*response, "docker_get", "username"),
                           client::answer_string(*response, "docker_get", "secret"));
    const proto::ScrubGuard text_guard(text);
    client::write_all_output(out, text);
}

void erase(int in, const client::ClientOptions& options) {
    Json request = proto::make_request(proto::Op::docker_erase);
    request["server"] = read_server(in);
    // Nothing stored for the server is success, as with the upstream
    // secretservice and pass helpers (and `podman logout` counts on it).
    (void)ask(request, options);
}

void list(int out, const client::ClientOptions& options) {
    const Json response = ask(proto::make_request(proto::Op::docker_list), options);
    const auto servers = response.find("servers");
    client::write_all_output(out, format_list(servers != response.end() ? *servers : Json()));
}

// The failure line on standard output, which Docker shows its user: through
// the printable filter, as it may quote the daemon's reasons. A failure to
// write it changes nothing: the exit status says it failed.
int fail(int out, std::string_view message) {
    try {
        client::write_all_output(out, client::printable_lines(message) + "\n");
    } catch (const std::exception&) {  // NOLINT(bugprone-empty-catch): the status says it
    }
    return 1;
}

}  // namespace

int run(const std::vector<std::string>& args, int in, int out,
        const client::ClientOptions& options) {
    try {
        // As upstream's credentials.Serve: exactly one argument.
        if (args.size() != 1) return fail(out, usage());
        const std::string& verb = args[0];
        if (verb == "--version" || verb == "-v" || verb == "version") {
            client::write_all_output(out, version_line());
        } else if (verb == "--help" || verb == "-h") {
            client::write_all_output(out, usage() + "\n");
        } else if (verb == "store") {
            store(in, options);
        } else if (verb == "get") {
            get(in, out, options);
        } else if (verb == "erase") {
            erase(in, options);
        } else if (verb == "list") {
            list(out, options);
        } else {
            throw Error(ErrorCode::bad_request,
                        std::string(kProgram) + ": unknown action: " + verb);
        }
        return 0;
    } catch (const std::exception& e) {
        // proto::Error, NoDaemon, UnsafeSocket, filesystem errors: the message.
        return fail(out, e.what());
    }
}

}  // namespace hostkeeper::helper::docker_credential_helper
