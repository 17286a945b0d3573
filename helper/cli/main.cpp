// hostkeeper: the command line for people and scripts. The commands are a
// table (command.hpp); this parses the command line and runs the one named.

#include <CLI/CLI.hpp>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "helper/cli/command.hpp"
#include "helper/cli/help_footer.hpp"
#include "helper/client/common_cli.hpp"
#include "helper/client/daemon_client.hpp"
#include "helper/client/exit_codes.hpp"
#include "proto/version.hpp"

namespace {
using namespace hostkeeper;
using namespace hostkeeper::helper;

struct Added {
    std::unique_ptr<cli::Command> command;
    CLI::App* subcommand = nullptr;
};

// How to reach the daemon for `command`: --socket, its deadline (--timeout,
// else the command's own default, else --timeout's), whether it starts one.
client::ClientOptions options_for(const cli::Command& command, const CLI::App& app,
                                  const client::CommonOptions& common) {
    client::ClientOptions options = common.client_options();
    options.start_daemon = command.starts_daemon();
    if (const auto timeout = command.default_timeout();
        timeout && app.get_option("--timeout")->count() == 0)
        options.timeout = *timeout;
    return options;
}

}  // namespace

int main(int argc, char** argv) {
    const std::string program = "hostkeeper";
    CLI::App app{
        "hostkeeper: Terraform and OpenTofu credentials in the OS keyring, served by hostkeeperd.",
        program};
    app.require_subcommand(1);
    client::CommonOptions common;
    common.add_to(app, "give up after this many seconds");
    app.set_version_flag("--version", program + " " + proto::product_version());
    app.footer(cli::kHelpFooter);

    std::vector<Added> added;
    for (auto& command : cli::commands()) {
        CLI::App* subcommand = command->add_to(app);
        added.push_back({std::move(command), subcommand});
    }
    if (const auto code = client::parse_or_exit(app, argc, argv)) return *code;

    return client::run_reporting(program, [&] {
        for (const Added& entry : added) {
            if (entry.subcommand->parsed())
                return entry.command->run(options_for(*entry.command, app, common));
        }
        return client::kExitUsage;
    });
}
