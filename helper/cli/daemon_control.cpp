#include "helper/cli/daemon_control.hpp"

#include <cstdio>

#include "helper/cli/command.hpp"
#include "helper/client/exit_codes.hpp"
#include "helper/client/printable_output.hpp"
#include "proto/hostname.hpp"
#include "proto/messages.hpp"

namespace hostkeeper::helper::cli {
using proto::Json;

namespace {

class FlushCommand final : public Command {
  public:
    CLI::App* add_to(CLI::App& app) override {
        auto* cmd =
            app.add_subcommand("flush", "drop cached entries: all of them, or those of HOST");
        cmd->add_option("host", host_, "a registry hostname");
        return cmd;
    }
    bool starts_daemon() const override { return false; }
    int run(const client::ClientOptions& client) override { return run_flush(client, host_); }

  private:
    std::string host_;
};

class StartCommand final : public Command {
  public:
    CLI::App* add_to(CLI::App& app) override {
        return app.add_subcommand(
            "start", "start the daemon unless it is running (the helper also starts it on demand)");
    }
    int run(const client::ClientOptions& client) override { return run_start(client); }
};

class StopCommand final : public Command {
  public:
    CLI::App* add_to(CLI::App& app) override {
        return app.add_subcommand("stop", "stop the daemon and wait until it has exited");
    }
    bool starts_daemon() const override { return false; }
    int run(const client::ClientOptions& client) override { return run_stop(client); }
};

}  // namespace

int run_flush(const client::ClientOptions& client, const std::string& host) {
    Json request = proto::make_request(proto::Op::flush);
    if (!host.empty()) request["host"] = proto::normalize_hostname(host);
    client::DaemonClient daemon(client);
    const Json response = daemon.call(request);
    client::print_printable(stdout, "flushed %lld cached entr%s\n", response.value("flushed", 0LL),
                            response.value("flushed", 0LL) == 1 ? "y" : "ies");
    return client::kExitOk;
}

int run_start(client::ClientOptions client) {
    client.start_daemon = true;
    client::DaemonClient daemon(client);
    const Json response = daemon.call(proto::make_request(proto::Op::hello));
    client::print_printable(stdout, "hostkeeperd %s is running at %s\n",
                            response.value("daemon_version", "?").c_str(),
                            daemon.location().socket.c_str());
    return client::kExitOk;
}

int run_stop(const client::ClientOptions& client) {
    // Returns once that process has exited, so that scripts can rely on it.
    if (!client::DaemonClient(client).stop()) {
        client::print_printable(stdout, "hostkeeperd is not running\n");
        return client::kExitOk;
    }
    client::print_printable(stdout, "hostkeeperd stopped\n");
    return client::kExitOk;
}

std::unique_ptr<Command> flush_command() {
    return std::make_unique<FlushCommand>();
}
std::unique_ptr<Command> start_command() {
    return std::make_unique<StartCommand>();
}
std::unique_ptr<Command> stop_command() {
    return std::make_unique<StopCommand>();
}

}  // namespace hostkeeper::helper::cli
