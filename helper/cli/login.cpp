#include "helper/cli/login.hpp"

#include <cstdio>
#include <cstdlib>
#include <utility>

#include "helper/cli/command.hpp"
#include "helper/cli/list.hpp"
#include "helper/cli/login_redirect.hpp"
#include "helper/cli/loopback_listener.hpp"
#include "helper/client/exit_codes.hpp"
#include "helper/client/printable_output.hpp"
#include "helper/client/subprocess.hpp"
#include "proto/error.hpp"
#include "proto/hostname.hpp"
#include "proto/messages.hpp"
#include "proto/secret.hpp"

namespace hostkeeper::helper::cli {
namespace {
using proto::Json;
using steady = std::chrono::steady_clock;

// The login.v1 "ports" of HOST's discovery (1024-65535 when it names none).
// Throws proto::Error unsupported_service when HOST offers no login.v1.
std::pair<int, int> login_ports(client::DaemonClient& daemon, const std::string& host) {
    Json request = proto::make_request(proto::Op::discover);
    request["host"] = host;
    const Json answer = daemon.call(request);
    const Json services = answer.value("services", Json::object());
    const auto login = services.find("login.v1");
    if (login == services.end() || !login->is_object())
        throw proto::Error(proto::ErrorCode::unsupported_service,
                           host_for_people(host) + " offers no login.v1 service: it cannot be " +
                               "logged in to (store a token with terraform login or hostkeeper " +
                               "import instead)");
    const Json ports = login->value("ports", Json::array({1024, 65535}));
    if (!ports.is_array() || ports.size() != 2 || !ports[0].is_number_integer() ||
        !ports[1].is_number_integer())
        return {1024, 65535};  // the daemon's login_start says what is wrong
    return {ports[0].get<int>(), ports[1].get<int>()};
}

bool has_display() {
    for (const char* name : {"DISPLAY", "WAYLAND_DISPLAY"}) {
        const char* value = std::getenv(name);
        if (value != nullptr && *value != '\0') return true;
    }
    return false;
}

// The authorization code the browser's redirect brings. Any other request
// is answered (404 another path, 400 a request that is not this login's
// redirect) and the wait goes on: another local user can reach the port, so
// no number of them may end the login; `wait_seconds` bounds it. Throws
// LoginRefused, or proto::Error timeout when no redirect came in time.
proto::Secret await_code(LoopbackListener& listener, const std::string& state, int wait_seconds) {
    const steady::time_point deadline = steady::now() + std::chrono::seconds(wait_seconds);
    bool told = false;
    while (const std::optional<std::string> head = listener.next_request(deadline)) {
        try {
            RedirectRequest redirect = read_redirect(*head, state);
            if (!redirect.is_login) {
                listener.answer(404, "Not found", "hostkeeper waits for /login only.");
                continue;
            }
            listener.answer(200, "hostkeeper: authorization received",
                            "hostkeeper received the authorization. You can close this window "
                            "and return to the terminal.");
            return proto::Secret::adopt(redirect.code);
        } catch (const LoginRefused&) {
            listener.answer(400, "hostkeeper: login failed",
                            "The login was not completed. See the terminal for why.");
            throw;
        } catch (const RedirectError& e) {
            listener.answer(400, "hostkeeper: not this login's redirect",
                            std::string(e.what()) + "; hostkeeper ignored it.");
            if (!std::exchange(told, true))
                client::print_printable(
                    stderr,
                    "hostkeeper: ignored a request to port %d that is not this login's "
                    "redirect (%s); still waiting (further ones are not reported)\n",
                    listener.port(), e.what());
        }
    }
    throw proto::Error(proto::ErrorCode::timeout, "no redirect from the browser within " +
                                                      std::to_string(wait_seconds) +
                                                      "s (--wait): run hostkeeper login again");
}

void print_logged_in(const std::string& who, const Json& answer, const char* what) {
    const Json expires = answer.value("expires_at", Json());
    std::string text = who + ": " + what + "; the token is stored in the keyring";
    if (expires.is_string()) text += ", expires " + expires.get<std::string>();
    if (answer.value("refreshable", false))
        text += "; hostkeeperd refreshes it ahead of its expiry";
    client::print_printable(stdout, "%s\n", text.c_str());
}

int run_refresh(client::DaemonClient& daemon, const std::string& host) {
    Json request = proto::make_request(proto::Op::login_refresh);
    request["host"] = host;
    print_logged_in(host_for_people(host), daemon.call(request), "refreshed");
    return client::kExitOk;
}

}  // namespace

int run_login(const client::ClientOptions& client, const LoginOptions& options) {
    const std::string host = proto::normalize_hostname(options.host);
    client::DaemonClient daemon(client);
    if (options.refresh) return run_refresh(daemon, host);
    const auto [first, last] = login_ports(daemon, host);
    LoopbackListener listener(first, last);
    Json start = proto::make_request(proto::Op::login_start);
    start["host"] = host;
    start["port"] = listener.port();
    const Json started = daemon.call(start);
    const std::string url = started.value("url", "");
    const std::string state = started.value("state", "");
    client::print_printable(stderr, "hostkeeper: open this URL in a browser to log in to %s:\n",
                            host_for_people(host).c_str());
    client::print_printable(stdout, "%s\n", url.c_str());
    std::fflush(stdout);
    if (!options.no_browser && has_display())
        (void)client::run_captured({"xdg-open", url}, std::chrono::seconds(10));
    client::print_printable(
        stderr, "hostkeeper: waiting for the browser's redirect to port %d (up to %ds)\n",
        listener.port(), options.wait_seconds);
    proto::Secret code = await_code(listener, state, options.wait_seconds);
    Json exchange = proto::make_request(proto::Op::login_exchange);
    const proto::ScrubGuard guard(exchange);
    exchange["host"] = host;
    exchange["state"] = state;
    exchange["code"] = std::string(code.view());
    // A new client: the first one's deadline ran while the browser was awaited.
    print_logged_in(host_for_people(host), client::DaemonClient(client).call(exchange),
                    "logged in");
    return client::kExitOk;
}

namespace {

class LoginCommand final : public Command {
  public:
    CLI::App* add_to(CLI::App& app) override {
        auto* cmd = app.add_subcommand(
            "login",
            "log in to HOST with its login.v1 service, as terraform login does; hostkeeperd keeps "
            "the token and refreshes it ahead of its expiry when the server gave a refresh token");
        cmd->add_option("host", options_.host, "the host (its login.v1 service)")->required();
        cmd->add_flag("--no-browser", options_.no_browser,
                      "do not start a browser: only print the URL to open");
        cmd->add_option("--wait", options_.wait_seconds,
                        "seconds to wait for the browser's redirect (default 300)")
            ->check(CLI::Range(1, 3600));
        cmd->add_flag("--refresh", options_.refresh,
                      "refresh the stored login of HOST now (its refresh token)");
        cmd->footer(
            "Exit status: 0 logged in (or refreshed); 3 HOST offers no login.v1, or --refresh "
            "finds no stored login with a refresh token; 5 no redirect came within --wait; 1 the "
            "login or refresh failed (the authorization server's error is shown).");
        return cmd;
    }
    int run(const client::ClientOptions& client) override { return run_login(client, options_); }

  private:
    LoginOptions options_;
};

}  // namespace

std::unique_ptr<Command> login_command() {
    return std::make_unique<LoginCommand>();
}

}  // namespace hostkeeper::helper::cli
