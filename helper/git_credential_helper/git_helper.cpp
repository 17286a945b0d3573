#include "helper/git_credential_helper/git_helper.hpp"

#include <exception>
#include <optional>

#include "helper/client/printable_output.hpp"
#include "helper/client/standard_streams.hpp"
#include "helper/git_credential_helper/git_credentials.hpp"
#include "proto/error.hpp"
#include "proto/git_credential.hpp"
#include "proto/messages.hpp"
#include "proto/secret.hpp"
#include "proto/version.hpp"

namespace hostkeeper::helper::git_credential_helper {
using proto::Error;
using proto::ErrorCode;
using proto::Json;

namespace {

std::string usage() {
    return "Usage: " + std::string(kProgram) + " get|store|erase\n";
}

std::string help() {
    return usage() +
           "A git credential helper (git-credential(1)): git asks it for https hosts, and it\n"
           "answers the Terraform token hostkeeper keeps for the host (username: the host's\n"
           "git_username in hostkeeperd's config.toml, default oauth2), or a credential kept\n"
           "by store. Enable it with:\n"
           "  git config --global credential.helper hostkeeper\n";
}

GitCredential read_credential(int in) {
    std::string input = client::read_all_input(in, client::kMaxHelperInput,
                                               "the credential on standard input is over 64 KiB");
    const proto::ScrubGuard input_guard(input);
    return parse_credential(input);
}

// Whether the daemon is asked at all: https with a host only.
bool ours(const GitCredential& credential) {
    return credential.protocol == proto::kGitProtocol && !credential.host.empty();
}

// {"v","op","protocol","host"} and "path" and "username" when git gave
// them; an empty username only to be stored (to find or erase, "" is any).
Json make_git_request(proto::Op op, const GitCredential& credential) {
    Json request = proto::make_request(op);
    request["protocol"] = credential.protocol;
    request["host"] = credential.host;
    if (!credential.path.empty()) request["path"] = credential.path;
    if (credential.username && (op == proto::Op::git_store || !credential.username->empty())) {
        request["username"] = *credential.username;
    }
    return request;
}

void add_secret(Json& request, const char* name, const proto::Secret& secret) {
    std::string text(secret.view());
    request[name] = text;
    proto::scrub(text);
}

// git's values are bytes, hostkeeper's requests UTF-8 JSON, whose writer
// would replace other bytes: such a credential is refused, never kept or
// matched as something else. `then` ends the message.
void require_utf8(const Json& request, const std::string& then) {
    try {
        std::string text = request.dump(-1, ' ', false, Json::error_handler_t::strict);
        proto::scrub(text);
    } catch (const Json::type_error&) {
        throw Error(ErrorCode::bad_request,
                    "the credential holds bytes that are not UTF-8, which hostkeeper does not "
                    "keep" +
                        then);
    }
}

Json ask(const Json& request, const client::ClientOptions& options, const std::string& then) {
    require_utf8(request, then);
    client::DaemonClient daemon(options);
    return daemon.call(request);
}

void get(int in, int out, const client::ClientOptions& options) {
    const GitCredential credential = read_credential(in);
    if (!ours(credential)) return;
    Json response = ask(make_git_request(proto::Op::git_get, credential), options, "");
    const proto::ScrubGuard response_guard(response);
    const auto found = response.find("found");
    if (found == response.end() || !found->is_boolean()) {
        throw Error(ErrorCode::internal, "hostkeeperd's git_get answer has no boolean \"found\"");
    }
    if (!found->get<bool>()) return;
    std::optional<std::uint64_t> expiry;
    if (const auto e = response.find("password_expiry_utc"); e != response.end()) {
        if (!e->is_number_unsigned()) {
            throw Error(ErrorCode::internal,
                        "hostkeeperd's git_get answer has a password_expiry_utc that is not a "
                        "number of seconds");
        }
        expiry = e->get<std::uint64_t>();
    }
    std::optional<std::string_view> refresh;
    if (response.contains("oauth_refresh_token")) {
        refresh = client::answer_string(response, "git_get", "oauth_refresh_token");
    }
    std::string text =
        format_answer(client::answer_string(response, "git_get", "username"),
                      client::answer_string(response, "git_get", "password"), expiry, refresh);
    const proto::ScrubGuard text_guard(text);
    client::write_all_output(out, text);
}

void store(int in, const client::ClientOptions& options) {
    const GitCredential credential = read_credential(in);
    // As git's own helpers: nothing to keep without a username and a
    // password, though either may be empty.
    if (!ours(credential) || !credential.username || !credential.password) return;
    Json request = make_git_request(proto::Op::git_store, credential);
    const proto::ScrubGuard request_guard(request);
    add_secret(request, "password", *credential.password);
    if (credential.password_expiry_utc) {
        request["password_expiry_utc"] = *credential.password_expiry_utc;
    }
    if (credential.oauth_refresh_token && !credential.oauth_refresh_token->empty()) {
        add_secret(request, "oauth_refresh_token", *credential.oauth_refresh_token);
    }
    // The request must fit in a frame: said before any daemon is asked.
    try {
        std::string payload = proto::serialize(request);
        proto::scrub(payload);
    } catch (const Error& e) {
        throw Error(e.code(), std::string(e.what()) + "; nothing was stored");
    }
    Json response = ask(request, options, "; nothing was stored");
    proto::scrub(response);
}

void erase(int in, const client::ClientOptions& options) {
    const GitCredential credential = read_credential(in);
    if (!ours(credential)) return;
    Json request = make_git_request(proto::Op::git_erase, credential);
    const proto::ScrubGuard request_guard(request);
    if (credential.password && !credential.password->empty()) {
        add_secret(request, "password", *credential.password);
    }
    Json response = ask(request, options, "; nothing was erased");
    proto::scrub(response);
}

// An action the helper does not know: its input is read (as git's own
// helpers read it before looking at the action, so that a writer that does
// not ignore SIGPIPE is not killed by it) and dropped, whatever it holds.
void ignore(int in) {
    try {
        std::string input = client::read_all_input(in, client::kMaxHelperInput, "");
        proto::scrub(input);
    } catch (const std::exception&) {  // NOLINT(bugprone-empty-catch): nothing to say
    }
}

// The failure line on stderr, through the printable filter: the message may
// quote git's input (a host git decoded from a URL) or the daemon's reasons.
// A failure to write it changes nothing: the exit status says it failed.
int fail(int err, std::string_view message) {
    try {
        client::write_all_output(
            err,
            client::printable_lines(std::string(kProgram) + ": " + std::string(message)) + "\n");
    } catch (const std::exception&) {  // NOLINT(bugprone-empty-catch): the status says it
    }
    return 1;
}

}  // namespace

int run(const std::vector<std::string>& args, int in, int out, int err,
        const client::ClientOptions& options) {
    try {
        if (args.size() != 1)
            return fail(err, "usage: " + std::string(kProgram) + " get|store|erase");
        const std::string& action = args[0];
        if (action == "--version" || action == "-v") {
            client::write_all_output(out,
                                     std::string(kProgram) + " " + proto::product_version() + "\n");
        } else if (action == "--help" || action == "-h") {
            client::write_all_output(out, help());
        } else if (action == "get") {
            get(in, out, options);
        } else if (action == "store") {
            store(in, options);
        } else if (action == "erase") {
            erase(in, options);
        } else {
            // git may add actions, and a helper that does not know one must
            // let git go on.
            ignore(in);
        }
        return 0;
    } catch (const std::exception& e) {
        // proto::Error, NoDaemon, UnsafeSocket, filesystem errors: the message.
        return fail(err, e.what());
    }
}

}  // namespace hostkeeper::helper::git_credential_helper
