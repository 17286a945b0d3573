#pragma once
// One hostkeeper command as main's table holds it: the subcommand it adds
// to the command line (name, help, options), whether it starts hostkeeperd,
// its deadline when --timeout is not given, and what it runs once parsed.
// Each command's own file makes it; `commands()` lists them in the order
// `hostkeeper --help` shows them.

#include <CLI/CLI.hpp>
#include <chrono>
#include <memory>
#include <optional>
#include <vector>

#include "helper/client/daemon_client.hpp"

namespace hostkeeper::helper::cli {

class Command {
  public:
    Command() = default;
    Command(const Command&) = delete;
    Command& operator=(const Command&) = delete;
    Command(Command&&) = delete;
    Command& operator=(Command&&) = delete;
    virtual ~Command() = default;

    // Adds the subcommand to `app`, with its help, options and own
    // subcommands bound to this object; returns it.
    virtual CLI::App* add_to(CLI::App& app) = 0;
    // Whether running it starts hostkeeperd when none is running; the
    // commands that report on a daemon (or stop it) do not.
    virtual bool starts_daemon() const { return true; }
    // Its deadline when --timeout is not given, asked once parsed; nullopt:
    // --timeout's own default.
    virtual std::optional<std::chrono::milliseconds> default_timeout() const {
        return std::nullopt;
    }
    // Runs the parsed command against the daemon `client` reaches; the
    // process exit code. Failures are thrown for run_reporting.
    virtual int run(const client::ClientOptions& client) = 0;
};

// Every command, in the order of `hostkeeper --help`.
std::vector<std::unique_ptr<Command>> commands();

// The commands, each from its own file.
std::unique_ptr<Command> status_command();    // status.hpp
std::unique_ptr<Command> flush_command();     // daemon_control.hpp
std::unique_ptr<Command> start_command();     // daemon_control.hpp
std::unique_ptr<Command> stop_command();      // daemon_control.hpp
std::unique_ptr<Command> discover_command();  // discover.hpp
std::unique_ptr<Command> module_command();    // registry_cli.hpp
std::unique_ptr<Command> provider_command();  // registry_cli.hpp
std::unique_ptr<Command> setup_command();     // setup.hpp
std::unique_ptr<Command> import_command();    // import.hpp
std::unique_ptr<Command> doctor_command();    // doctor.hpp
std::unique_ptr<Command> unlock_command();    // keyring_cli.hpp
std::unique_ptr<Command> migrate_command();   // keyring_cli.hpp
std::unique_ptr<Command> list_command();      // list.hpp
std::unique_ptr<Command> check_command();     // check.hpp
std::unique_ptr<Command> rotate_command();    // rotate.hpp
std::unique_ptr<Command> login_command();     // login.hpp
std::unique_ptr<Command> exec_command();      // token_commands.hpp
std::unique_ptr<Command> token_command();     // token_commands.hpp

}  // namespace hostkeeper::helper::cli
