#include "helper/client/daemon_client.hpp"

#include <fcntl.h>
#include <signal.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <string>
#include <thread>

#include "helper/client/connection.hpp"
#include "helper/client/launcher.hpp"
#include "proto/error.hpp"
#include "proto/session_bus.hpp"
#include "proto/version.hpp"

namespace hostkeeper::helper::client {
using proto::Error;
using proto::ErrorCode;
using proto::Json;

namespace {

proto::SocketLocation locate(const ClientOptions& options) {
    if (!options.socket) return proto::resolve_socket_location();
    const auto socket = std::filesystem::absolute(*options.socket);
    return {socket, socket.parent_path()};
}

bool has_error_code(const Json& response, ErrorCode code) {
    const auto error = response.find("error");
    return response.value("ok", true) == false && error != response.end() && error->is_object() &&
           error->value("code", "") == proto::to_string(code);
}

bool process_gone(long long pid) {
    if (::kill(static_cast<pid_t>(pid), 0) != 0) return errno == ESRCH;
    // A zombie has exited; its parent just has not reaped it yet. Read
    // without iostreams, which the helper does not link (helper_arguments.hpp).
    std::string text;
    const int fd = ::open(("/proc/" + std::to_string(pid) + "/stat").c_str(), O_RDONLY | O_CLOEXEC);
    if (fd >= 0) {
        char buffer[1024];
        ssize_t n = 0;
        while ((n = ::read(fd, buffer, sizeof buffer)) > 0 || (n < 0 && errno == EINTR)) {
            if (n > 0) text.append(buffer, static_cast<std::size_t>(n));
        }
        ::close(fd);
    }
    const auto close = text.rfind(')');
    return close != std::string::npos && text.size() > close + 2 && text[close + 2] == 'Z';
}

bool refused_version(const Json& response) {
    return has_error_code(response, ErrorCode::unsupported_version);
}

}  // namespace

ClientOptions make_client_options(const std::string& socket, double timeout_seconds) {
    ClientOptions options;
    if (!socket.empty()) options.socket = socket;
    options.timeout = std::chrono::milliseconds(static_cast<long long>(timeout_seconds * 1000));
    return options;
}

DaemonClient::DaemonClient(const ClientOptions& options)
    : location_(locate(options)), deadline_(options.timeout), start_daemon_(options.start_daemon) {}

Json DaemonClient::exchange(const Json& request) {
    Connection connection = connect_or_start(location_, deadline_, start_daemon_);
    return connection.round_trip(request, deadline_);
}

void DaemonClient::replace_outdated_daemon(const Json& refusal) {
    // "stop" is frozen across protocol versions (PROTOCOL.md, "Versions"):
    // any daemon honours it, whatever "v" it speaks.
    int version = 1;
    if (const auto supported = refusal.find("supported");
        supported != refusal.end() && supported->is_array() && !supported->empty() &&
        supported->back().is_number_integer()) {
        version = supported->back().get<int>();
    }
    stop_daemon(version);
}

std::optional<Json> DaemonClient::retry_on_own_bus(const Json& refusal, const Json& request) {
    const auto daemon = refusal.find("daemon");
    if (daemon == refusal.end() || !daemon->is_object()) return std::nullopt;
    const auto field = daemon->find("session_bus");
    const std::string theirs =
        field != daemon->end() && field->is_string() ? field->get<std::string>() : "";
    const std::string mine = proto::session_bus_address();
    if (mine.empty() || mine == theirs) return std::nullopt;  // the bus is not what differs
    const auto on_demand = daemon->find("on_demand");
    if (on_demand != daemon->end() && on_demand->is_boolean() && on_demand->get<bool>() &&
        start_daemon_) {
        // Started by some client without this bus (sudo, cron, an SSH login
        // without dbus-user-session): replace it with one started here.
        stop_daemon(proto::kProtocolVersion);
        return exchange(request);
    }
    Json explained = refusal;
    const std::string pid = daemon->contains("pid") ? daemon->at("pid").dump() : "?";
    const auto said = refusal["error"].find("message");
    explained["error"]["message"] =
        (said != refusal["error"].end() && said->is_string() ? said->get<std::string>()
                                                             : "no Secret Service") +
        ". hostkeeperd (pid " + pid + ") was started without your session bus (it has " +
        (theirs.empty() ? "none" : theirs) + ", you have " + mine +
        "): if your systemd user manager started it, run 'systemctl --user import-environment "
        "DBUS_SESSION_BUS_ADDRESS' and 'systemctl --user restart hostkeeperd.service'; otherwise "
        "run "
        "'hostkeeper stop' and try again";
    return explained;
}

void DaemonClient::stop_daemon(int version) {
    Json stop = proto::make_request(proto::Op::stop);
    stop["v"] = version;
    Json answer;
    try {
        answer = exchange(stop);
    } catch (const ConnectionLost&) {
        // It went away before answering: that is what we asked for.
    }
    wait_until_stopped(answer);
}

bool DaemonClient::stop() {
    Json answer;
    try {
        answer = call(proto::make_request(proto::Op::stop));
    } catch (const NoDaemon&) {
        return false;
    }
    wait_until_stopped(answer);
    return true;
}

void DaemonClient::wait_until_stopped(const Json& answer) {
    // By its pid, when it said it: not "once the socket stops answering",
    // since under socket activation systemd keeps answering.
    const auto pid = answer.is_object() ? answer.find("pid") : answer.end();
    if (pid != answer.end() && pid->is_number_integer() && pid->get<long long>() > 0) {
        while (!process_gone(pid->get<long long>())) {
            if (deadline_.expired())
                throw Error(ErrorCode::timeout, "hostkeeperd did not stop in time");
            std::this_thread::sleep_for(std::chrono::milliseconds(5));
        }
        return;
    }
    // A daemon that did not say (an older protocol's): until it no longer
    // answers (a socket-activated one is replaced by systemd on the next
    // connection, which is as good).
    int error = 0;
    for (int i = 0; i < 400 && Connection::open(location_.socket, deadline_, error); ++i) {
        if (deadline_.expired())
            throw Error(ErrorCode::timeout, "timed out waiting for the old hostkeeperd to stop");
        std::this_thread::sleep_for(std::chrono::milliseconds(5));
    }
}

Json DaemonClient::attempt(const Json& request) {
    Json response;
    try {
        response = exchange(request);
    } catch (const ConnectionLost&) {
        // The daemon went away between accept and answer (killed, or stopping):
        // every request is idempotent, so ask again, starting a new one if needed.
        response = exchange(request);
    }
    if (refused_version(response) && start_daemon_) {
        replace_outdated_daemon(response);
        response = exchange(request);
    }
    return response;
}

Json DaemonClient::call(const Json& request) {
    // A daemon at its connection limit answers `busy` at once and hangs up:
    // it is alive, so ask again (5 ms, doubling to 200 ms) until the deadline.
    std::chrono::milliseconds pause{5};
    int refusals = 0;
    bool bus_checked = false;
    while (true) {
        Json response = attempt(request);
        if (!bus_checked && has_error_code(response, ErrorCode::keyring_unavailable)) {
            bus_checked = true;
            if (auto other = retry_on_own_bus(response, request)) response = std::move(*other);
        }
        if (!has_error_code(response, ErrorCode::busy)) {
            proto::check_response(response);
            return response;
        }
        ++refusals;
        if (deadline_.remaining_ms() <= pause.count()) {
            throw Error(ErrorCode::busy,
                        "hostkeeperd at " + location_.socket.string() +
                            " stayed busy: it refused this client " + std::to_string(refusals) +
                            " times for having its maximum number of connections open (other "
                            "clients, or clients that hang); raise --timeout to wait longer");
        }
        std::this_thread::sleep_for(pause);
        pause = std::min(pause * 2, std::chrono::milliseconds(200));
    }
}

const std::string& answer_string(const proto::Json& answer, std::string_view op, const char* name) {
    const auto found = answer.find(name);
    if (found == answer.end() || !found->is_string()) {
        throw proto::Error(
            proto::ErrorCode::internal,
            "hostkeeperd's " + std::string(op) + " answer has no string \"" + name + "\"");
    }
    return found->get_ref<const std::string&>();
}

}  // namespace hostkeeper::helper::client
