#include "helper/cli/status.hpp"

#include <cstdio>
#include <string>

#include "helper/cli/command.hpp"
#include "helper/cli/fleet_status.hpp"
#include "helper/cli/keyring_cli.hpp"
#include "helper/cli/list.hpp"
#include "helper/cli/registry_cache_doctor.hpp"
#include "helper/client/common_cli.hpp"
#include "helper/client/exit_codes.hpp"
#include "helper/client/printable_output.hpp"
#include "proto/messages.hpp"

namespace hostkeeper::helper::cli {
using proto::Json;

namespace {

void print_daemon(const Json& d, const client::DaemonClient& daemon) {
    client::print_printable(stdout, "hostkeeperd %s (protocol %d), pid %lld, up %s%s\n",
                            d.value("version", "?").c_str(), d.value("protocol", 0),
                            d.value("pid", 0LL),
                            client::duration_text(d.value("uptime_s", 0LL)).c_str(),
                            d.value("on_demand", false) ? ", started on demand" : "");
    client::print_printable(stdout, "socket: %s\n", daemon.location().socket.c_str());
}

void print_credentials(const Json& c) {
    client::print_printable(
        stdout,
        "credentials cache: %lld entries (%lld with credentials, %lld without), %lld hits, %lld "
        "misses, "
        "%lld keyring lookups\n",
        c.value("entries", 0LL), c.value("positive", 0LL), c.value("negative", 0LL),
        c.value("hits", 0LL), c.value("misses", 0LL), c.value("keyring_lookups", 0LL));
    if (const auto rejected = c.find("rejected"); rejected != c.end() && rejected->is_array()) {
        for (const Json& r : *rejected) {
            if (!r.is_object()) continue;
            const std::string host = r.value("host", "?");
            client::print_printable(
                stdout,
                "token refused: %s (HTTP %lld from %s at %s, %s ago): not handed out until a new "
                "one is stored; run terraform login %s, or hostkeeper check %s once it is valid "
                "again\n",
                host.c_str(), r.value("status", 0LL), r.value("url", "?").c_str(),
                r.value("at", "?").c_str(), client::duration_text(r.value("age_s", 0LL)).c_str(),
                host.c_str(), host.c_str());
        }
    }
    if (const auto failures = c.find("refresh_failures");
        failures != c.end() && failures->is_object()) {
        for (const auto& [host, why] : failures->items()) {
            client::print_printable(
                stdout, "token refresh failed: %s: %s; run hostkeeper login %s\n", host.c_str(),
                why.is_string() ? why.get<std::string>().c_str() : "?", host.c_str());
        }
    }
    if (const auto expiries = c.find("expiries"); expiries != c.end() && expiries->is_array()) {
        for (const Json& e : *expiries) {
            if (!e.is_object()) continue;
            const std::string line = expiry_warning(e);
            if (!line.empty()) client::print_printable(stdout, "%s\n", line.c_str());
        }
    }
}

// The hosts whose token comes from a command: its state, never its token.
void print_commands(const Json& c) {
    const auto commands = c.find("commands");
    if (commands == c.end() || !commands->is_array()) return;
    for (const Json& entry : *commands) {
        if (!entry.is_object()) continue;
        const std::string host = entry.value("host", "?");
        std::string line =
            "token command: " + host + ", " + std::to_string(entry.value("runs", 0LL)) + " runs";
        if (entry.value("running", false)) line += ", running now";
        if (entry.contains("expires_in_s")) {
            const long long left = entry.value("expires_in_s", 0LL);
            line += left > 0 ? ", token expires in " + client::duration_text(left)
                             : std::string(", token expired");
        }
        if (entry.contains("last_error")) line += "; FAILED: " + entry.value("last_error", "");
        client::print_printable(stdout, "%s\n", line.c_str());
    }
}

void print_keyring(const Json& response, const Json& c) {
    if (const auto keyring = response.find("keyring");
        keyring != response.end() && keyring->is_object()) {
        for (const auto& line : keyring_status_lines(*keyring))
            client::print_printable(stdout, "%s\n", line.c_str());
    }
    if (!c.contains("keyring_watched")) return;
    if (c.value("keyring_watched", false)) {
        client::print_printable(
            stdout, "keyring watch: on (%lld invalidations after a lock, an edit or a restart)\n",
            c.value("invalidations", 0LL));
    } else {
        client::print_printable(
            stdout,
            "keyring watch: OFF, the Secret Service cannot be watched; credentials are not "
            "cached\n");
    }
}

void print_registry(const Json& response) {
    if (const auto disc = response.find("discovery"); disc != response.end()) {
        client::print_printable(
            stdout,
            "discovery cache: %lld entries (%lld with services, %lld without, %lld failures), %lld "
            "hits, "
            "%lld misses, %lld stale answers, %lld forced, %lld upstream requests (%lld failed)\n",
            disc->value("entries", 0LL), disc->value("positive", 0LL), disc->value("empty", 0LL),
            disc->value("errors", 0LL), disc->value("hits", 0LL), disc->value("misses", 0LL),
            disc->value("stale", 0LL), disc->value("forced", 0LL),
            disc->value("upstream_requests", 0LL), disc->value("upstream_failures", 0LL));
    }
    if (const auto reg = response.find("registry"); reg != response.end()) {
        // A registry's failure answered from the copy kept on disk is a
        // stale answer too, though the answer cache did not give it.
        long long from_disk = 0;
        if (const auto cache = response.find("registry_cache");
            cache != response.end() && cache->is_object()) {
            from_disk = cache->value("from_disk", 0LL);
        }
        const std::string disk =
            from_disk > 0 ? " (" + std::to_string(from_disk) + " from the copies kept on disk)"
                          : "";
        client::print_printable(
            stdout,
            "registry cache: %lld entries (%lld documents, %lld not found, %lld failures), "
            "%lld hits, %lld misses, %lld stale answers%s, %lld upstream requests "
            "(%lld failed), %lld in flight, %lld evictions\n",
            reg->value("entries", 0LL), reg->value("documents", 0LL), reg->value("not_found", 0LL),
            reg->value("errors", 0LL), reg->value("hits", 0LL), reg->value("misses", 0LL),
            reg->value("stale", 0LL) + from_disk, disk.c_str(),
            reg->value("upstream_requests", 0LL), reg->value("upstream_failures", 0LL),
            reg->value("in_flight", 0LL), reg->value("evictions", 0LL));
    }
    if (const auto cache = response.find("registry_cache");
        cache != response.end() && cache->is_object()) {
        client::print_printable(stdout, "%s\n", registry_cache_status_line(*cache).c_str());
        if (const std::string fleet = fleet_status_line(*cache); !fleet.empty())
            client::print_printable(stdout, "%s\n", fleet.c_str());
    }
}

class StatusCommand final : public Command {
  public:
    CLI::App* add_to(CLI::App& app) override {
        auto* cmd = app.add_subcommand("status",
                                       "show the running daemon: pid, version, uptime, the "
                                       "keyring backend and why, "
                                       "credentials/discovery/registry cache counters");
        cmd->add_flag("--json", json_, "print the daemon's answer as JSON");
        return cmd;
    }
    bool starts_daemon() const override { return false; }
    int run(const client::ClientOptions& client) override { return run_status(client, json_); }

  private:
    bool json_ = false;
};

}  // namespace

int run_status(const client::ClientOptions& client, bool json) {
    client::DaemonClient daemon(client);
    const Json response = daemon.call(proto::make_request(proto::Op::status));
    if (json) {
        // ASCII only: the answer's text from elsewhere shows escaped.
        std::printf("%s\n", response.dump(2, ' ', true).c_str());
        return client::kExitOk;
    }
    const Json& d = response.at("daemon");
    const Json& c = response.at("credentials");
    print_daemon(d, daemon);
    print_credentials(c);
    print_commands(c);
    print_keyring(response, c);
    print_registry(response);
    return client::kExitOk;
}

std::unique_ptr<Command> status_command() {
    return std::make_unique<StatusCommand>();
}

}  // namespace hostkeeper::helper::cli
