#pragma once
// Tokens from commands: for a host with a token_command, the token the
// command printed, kept until it expires. Concurrent gets run the command
// once; when a tenth of the token's lifetime is left (at most 5 minutes
// before its expiry) the next get starts the next run in the background and
// is answered with the current token; a token is never served at or after
// its expiry (a get then waits for the command). A run that fails with no
// token to serve is remembered for kFailureBackoff: gets in that time answer
// its error without running the command again (flush forgets it). The
// command runs on a worker thread (command_runner), never on the event loop.

#include <boost/asio/any_io_executor.hpp>
#include <boost/asio/awaitable.hpp>
#include <chrono>
#include <cstdint>
#include <functional>
#include <map>
#include <optional>
#include <string>

#include "daemon/async/single_flight.hpp"
#include "daemon/credentials/command_runner.hpp"
#include "daemon/credentials/token_command_options.hpp"
#include "proto/secret.hpp"

namespace hostkeeper::daemon::credentials {

// How long a failed run, with no token to serve, answers the gets that follow.
inline constexpr std::chrono::seconds kFailureBackoff{5};

// What `status` says of a host's command (never its token).
struct CommandTokenState {
    std::uint64_t runs = 0;
    std::optional<std::chrono::steady_clock::time_point> last_run;  // when the last run ended
    std::optional<std::chrono::steady_clock::time_point> expires;   // the token served now
    std::string last_error;  // why the last run failed; "" after a success
    bool running = false;
};

class CommandTokens {
  public:
    using Runner = std::function<CommandRun(const TokenCommand&)>;  // blocking
    using Clock = std::function<std::chrono::steady_clock::time_point()>;
    using WallClock = std::function<std::chrono::system_clock::time_point()>;

    // `io`: the event loop's executor. `worker`: where the commands run.
    // `runner`: run_token_command, with stop() ending its commands, when empty.
    CommandTokens(boost::asio::any_io_executor io, boost::asio::any_io_executor worker,
                  TokenCommandOptions options, Runner runner = {},
                  Clock clock = std::chrono::steady_clock::now,
                  WallClock wall_clock = std::chrono::system_clock::now);

    bool has(const std::string& host) const { return options_.hosts.count(host) != 0; }
    // The host's token_username ("": none, or no command for the host).
    std::string username(const std::string& host) const {
        const auto command = options_.hosts.find(host);
        return command != options_.hosts.end() ? command->second.username : std::string();
    }
    // The host's credentials object, {"token": "..."}. Throws proto::Error
    // token_command_failed: the command failed, or commands are refused.
    boost::asio::awaitable<proto::Secret> get(std::string host);
    // Forgets every token (or `host`'s): the next get runs the command.
    std::size_t flush();
    std::size_t flush(const std::string& host);
    std::map<std::string, CommandTokenState> states() const;
    // Runs `command` once on the commands' worker as a host's command runs
    // (its program checked, bounded, ended when the daemon stops): for a
    // program named elsewhere than a host's token_command, such as a Docker
    // credential helper. Not run while commands are refused (launch_error).
    boost::asio::awaitable<CommandRun> run_once(TokenCommand command);
    // The daemon stops: the commands running now are ended (their process
    // groups: SIGTERM, then SIGKILL), and none starts after. Blocks at most
    // RunningCommands::kStopGrace; call it before joining the worker.
    void stop() { running_.stop(); }

  private:
    struct Entry {
        CommandTokenState state;
        std::optional<proto::Secret> credentials;
        std::chrono::steady_clock::time_point refresh_at;  // from here, a get starts a run
        // Until then, a get with no token to serve answers state.last_error.
        std::optional<std::chrono::steady_clock::time_point> failed_until;
    };

    boost::asio::awaitable<proto::Secret> fetch(std::string host);
    boost::asio::awaitable<void> refresh(std::string host);
    boost::asio::awaitable<proto::Secret> shared_run(const std::string& host);
    void start_refresh(const std::string& host, Entry& entry);
    // The run's token made into the entry's credentials; throws proto::Error.
    void keep(const std::string& host, CommandRun& run,
              std::chrono::steady_clock::time_point started);

    boost::asio::any_io_executor io_;
    boost::asio::any_io_executor worker_;
    TokenCommandOptions options_;
    Runner runner_;
    Clock clock_;
    WallClock wall_clock_;
    std::map<std::string, Entry> entries_;
    RunningCommands running_;
    async::SingleFlight<proto::Secret> flights_;
};

// The error a failed run answers (the first line of its standard error
// included), without the token command's output.
std::string command_failure(const std::string& host, const TokenCommand& command,
                            const CommandRun& run);
// The same for a program run with run_once: `what` names it ("PROGRAM get
// for HOST").
std::string program_failure(const std::string& what, const TokenCommand& command,
                            const CommandRun& run);

}  // namespace hostkeeper::daemon::credentials
