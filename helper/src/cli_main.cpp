// hostkeeper: the command line for people and scripts.

#include <signal.h>

#include <cerrno>
#include <cstdio>
#include <fstream>
#include <iterator>
#include <string>
#include <thread>

#include <CLI/CLI.hpp>

#include "common_cli.hpp"
#include "daemon_client.hpp"
#include "exit_codes.hpp"
#include "hostkeeper/proto/error.hpp"
#include "hostkeeper/proto/hostname.hpp"
#include "hostkeeper/proto/messages.hpp"
#include "hostkeeper/proto/services.hpp"
#include "hostkeeper/proto/version.hpp"
#include "launcher.hpp"

namespace {
using namespace hostkeeper;
using proto::Json;

std::string duration_text(long long seconds) {
    std::string text;
    if (seconds >= 86400) text += std::to_string(seconds / 86400) + "d";
    if (seconds >= 3600) text += std::to_string(seconds / 3600 % 24) + "h";
    if (seconds >= 60) text += std::to_string(seconds / 60 % 60) + "m";
    return text + std::to_string(seconds % 60) + "s";
}

int status(const client::ClientOptions& options, bool json) {
    client::DaemonClient daemon(options);
    const Json response = daemon.call(proto::make_request(proto::Op::status));
    if (json) {
        std::printf("%s\n", response.dump(2).c_str());
        return client::kExitOk;
    }
    const Json& d = response.at("daemon");
    const Json& c = response.at("credentials");
    std::printf("hostkeeperd %s (protocol %d), pid %lld, up %s%s\n", d.value("version", "?").c_str(),
                d.value("protocol", 0), d.value("pid", 0LL), duration_text(d.value("uptime_s", 0LL)).c_str(),
                d.value("on_demand", false) ? ", started on demand" : "");
    std::printf("socket: %s\n", daemon.location().socket.c_str());
    std::printf("credentials cache: %lld entries (%lld with credentials, %lld without), %lld hits, %lld misses, "
                "%lld keyring lookups\n",
                c.value("entries", 0LL), c.value("positive", 0LL), c.value("negative", 0LL), c.value("hits", 0LL),
                c.value("misses", 0LL), c.value("keyring_lookups", 0LL));
    if (const auto disc = response.find("discovery"); disc != response.end()) {
        std::printf("discovery cache: %lld entries (%lld with services, %lld without, %lld failures), %lld hits, "
                    "%lld misses, %lld stale answers, %lld forced, %lld upstream requests (%lld failed)\n",
                    disc->value("entries", 0LL), disc->value("positive", 0LL), disc->value("empty", 0LL),
                    disc->value("errors", 0LL), disc->value("hits", 0LL), disc->value("misses", 0LL), disc->value("stale", 0LL),
                    disc->value("forced", 0LL), disc->value("upstream_requests", 0LL), disc->value("upstream_failures", 0LL));
    }
    return client::kExitOk;
}

std::string source_text(const Json& response) {
    const std::string source = response.value("source", "?");
    if (source == "forced") return "forced by configuration (no network)";
    std::string text = source == "network" ? "fetched now" : source == "cache" ? "from cache" : "STALE, from cache";
    if (response.contains("age_s") && source != "network") text += ", fetched " + duration_text(response.value("age_s", 0LL)) + " ago";
    if (response.contains("expires_in_s")) {
        const long long expires = response.value("expires_in_s", 0LL);
        text += expires > 0 ? ", fresh for " + duration_text(expires) : ", expired";
    }
    return text;
}

int discover_all(const Json& response) {
    std::printf("%s: %s\n", response.value("host", "?").c_str(), source_text(response).c_str());
    std::printf("document: %s\n", response.value("url", "?").c_str());
    if (response.contains("error")) std::printf("refresh failed: %s\n", response.value("error", "").c_str());
    const Json& services = response.at("services");
    if (services.empty()) std::printf("no services\n");
    for (const auto& [id, value] : services.items()) {
        std::printf("%-16s %s\n", id.c_str(), value.is_string() ? value.get<std::string>().c_str() : value.dump().c_str());
    }
    if (const auto invalid = response.find("invalid"); invalid != response.end()) {
        for (const auto& [id, why] : invalid->items()) {
            std::printf("%-16s unusable: %s\n", id.c_str(), why.is_string() ? why.get<std::string>().c_str() : "?");
        }
    }
    return client::kExitOk;
}

int discover_one(const Json& response, const std::string& service) {
    const Json& services = response.at("services");
    const std::string host = response.value("host", "?");
    if (const auto it = services.find(service); it != services.end()) {
        std::printf("%s\n", it->is_string() ? it->get<std::string>().c_str() : it->dump().c_str());
        return client::kExitOk;
    }
    if (const auto invalid = response.find("invalid"); invalid != response.end() && invalid->contains(service)) {
        std::fprintf(stderr, "hostkeeper: %s offers %s, but it cannot be used: %s\n", host.c_str(), service.c_str(),
                     invalid->at(service).get<std::string>().c_str());
        return client::kExitNotFound;
    }
    const std::vector<std::string> others = proto::other_versions(services, service);
    if (others.empty()) {
        std::fprintf(stderr, "hostkeeper: %s does not provide %s\n", host.c_str(), service.c_str());
    } else {
        std::string list;
        for (const std::string& other : others) list += (list.empty() ? "" : ", ") + other;
        std::fprintf(stderr, "hostkeeper: %s does not support %s; it offers %s\n", host.c_str(), service.c_str(),
                     list.c_str());
    }
    return client::kExitNotFound;
}

int discover(client::ClientOptions options, const std::string& host, const std::string& service, bool json,
             bool refresh) {
    if (!service.empty() && !proto::is_service_id(service)) {
        throw proto::Error(proto::ErrorCode::bad_request,
                           "\"" + service + "\" is not a service id such as modules.v1 or login.v1");
    }
    Json request = proto::make_request(proto::Op::discover);
    request["host"] = proto::normalize_hostname(host);
    if (refresh) request["refresh"] = true;
    options.start_daemon = true;  // a query, like the helper's: start the daemon if need be
    client::DaemonClient daemon(options);
    const Json response = daemon.call(request);
    if (json) {
        std::printf("%s\n", response.dump(2).c_str());
        if (!service.empty() && !response.at("services").contains(service)) return client::kExitNotFound;
        return client::kExitOk;
    }
    return service.empty() ? discover_all(response) : discover_one(response, service);
}

int flush(const client::ClientOptions& options, const std::string& host) {
    Json request = proto::make_request(proto::Op::flush);
    if (!host.empty()) request["host"] = proto::normalize_hostname(host);
    client::DaemonClient daemon(options);
    const Json response = daemon.call(request);
    std::printf("flushed %lld cached entr%s\n", response.value("flushed", 0LL),
                response.value("flushed", 0LL) == 1 ? "y" : "ies");
    return client::kExitOk;
}

int start(client::ClientOptions options) {
    options.start_daemon = true;
    client::DaemonClient daemon(options);
    const Json response = daemon.call(proto::make_request(proto::Op::hello));
    std::printf("hostkeeperd %s is running at %s\n", response.value("daemon_version", "?").c_str(),
                daemon.location().socket.c_str());
    return client::kExitOk;
}

bool process_gone(long long pid) {
    if (::kill(static_cast<pid_t>(pid), 0) != 0) return errno == ESRCH;
    // A zombie has exited; its parent just has not reaped it yet.
    std::ifstream stat("/proc/" + std::to_string(pid) + "/stat");
    std::string text((std::istreambuf_iterator<char>(stat)), std::istreambuf_iterator<char>());
    const auto close = text.rfind(')');
    return close != std::string::npos && text.size() > close + 2 && text[close + 2] == 'Z';
}

int stop(const client::ClientOptions& options) {
    client::DaemonClient daemon(options);
    Json response;
    try {
        response = daemon.call(proto::make_request(proto::Op::stop));
    } catch (const client::NoDaemon&) {
        std::printf("hostkeeperd is not running\n");
        return client::kExitOk;
    }
    // Return once that process has exited, so that scripts can rely on it.
    // (Not "once the socket stops answering": under socket activation systemd
    // keeps answering and would start a new daemon.)
    const long long pid = response.value("pid", 0LL);
    const client::Deadline deadline(options.timeout);
    while (pid > 0 && !process_gone(pid)) {
        if (deadline.expired()) throw proto::Error(proto::ErrorCode::timeout, "hostkeeperd did not stop in time");
        std::this_thread::sleep_for(std::chrono::milliseconds(5));
    }
    std::printf("hostkeeperd stopped\n");
    return client::kExitOk;
}

}  // namespace

int main(int argc, char** argv) {
    const std::string program = "hostkeeper";
    CLI::App app{"hostkeeper: Terraform and OpenTofu credentials in the OS keyring, served by hostkeeperd.", program};
    app.require_subcommand(1);
    client::CommonOptions common;
    common.add_to(app, "give up after this many seconds");
    app.set_version_flag("--version", program + " " + proto::product_version());
    app.footer("Exit codes: 0 ok, 1 the daemon, keyring or discovery failed, 2 bad arguments, 3 the host lacks "
               "the service, 4 no daemon, 5 timed out.");

    bool json = false;
    auto* status_cmd = app.add_subcommand("status", "show the running daemon: pid, version, uptime, cache counters");
    status_cmd->add_flag("--json", json, "print the daemon's answer as JSON");
    std::string host;
    auto* flush_cmd = app.add_subcommand("flush", "drop cached entries: all of them, or those of HOST");
    flush_cmd->add_option("host", host, "a registry hostname");
    auto* start_cmd =
        app.add_subcommand("start", "start the daemon unless it is running (the helper also starts it on demand)");
    auto* stop_cmd = app.add_subcommand("stop", "stop the daemon and wait until it has exited");
    std::string discover_host, service;
    bool refresh = false;
    auto* discover_cmd = app.add_subcommand(
        "discover", "a host's services (remote service discovery), from the daemon's cache when fresh");
    discover_cmd->add_option("host", discover_host, "a registry hostname, e.g. app.terraform.io")->required();
    discover_cmd->add_option("service", service, "print only this service's URL, e.g. modules.v1");
    discover_cmd->add_flag("--json", json, "print the daemon's answer as JSON");
    discover_cmd->add_flag("--refresh", refresh, "skip the cache and fetch the document now");
    if (const auto code = client::parse_or_exit(app, argc, argv)) return *code;

    client::ClientOptions options = common.client_options();
    options.start_daemon = false;  // reporting on a daemon must not start one
    return client::run_reporting(program, [&] {
        if (status_cmd->parsed()) return status(options, json);
        if (flush_cmd->parsed()) return flush(options, host);
        if (stop_cmd->parsed()) return stop(options);
        if (start_cmd->parsed()) return start(options);
        if (discover_cmd->parsed()) return discover(options, discover_host, service, json, refresh);
        return client::kExitUsage;
    });
}
