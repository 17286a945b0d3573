#include "daemon/credentials/command_tokens.hpp"

#include <spdlog/spdlog.h>

#include <algorithm>
#include <boost/asio/co_spawn.hpp>
#include <exception>

#include "daemon/async/on_worker.hpp"
#include "daemon/credentials/command_output.hpp"
#include "daemon/credentials/token_expiry.hpp"
#include "proto/error.hpp"
#include "proto/json.hpp"
#include "proto/printable.hpp"

namespace hostkeeper::daemon::credentials {
namespace asio = boost::asio;
using proto::Error;
using proto::ErrorCode;
using proto::Secret;
using steady = std::chrono::steady_clock;

namespace {

Secret clone(const Secret& secret) {
    return secret.clone();
}

Secret credentials_object(const Secret& token) {
    proto::Json object = {{"token", std::string(token.view())}};
    const proto::ScrubGuard guard(object);
    std::string text = object.dump();
    return Secret::adopt(text);
}

std::string command_name(const TokenCommand& command) {
    return command.argv.empty() ? std::string("token_command") : command.argv.front();
}

}  // namespace

namespace {

// `what` failed as `run` says; `timeout_setting`: the setting that bounds it
// ("" when none does).
std::string failure_text(const std::string& what, const std::string& timeout_setting,
                         const TokenCommand& command, const CommandRun& run) {
    const std::string said =
        run.first_error_line.empty() ? std::string() : ": " + run.first_error_line;
    if (!run.launch_error.empty()) return what + ": " + run.launch_error;
    if (run.timed_out)
        return what + " did not finish within " + std::to_string(command.timeout.count()) + "s" +
               (timeout_setting.empty() ? std::string() : " (" + timeout_setting + ")") +
               (run.left_behind.empty() ? std::string() : " and " + run.left_behind) + said;
    if (run.too_much_output) return what + " printed more than 64 KiB";
    if (run.signal != 0) return what + " was ended by signal " + std::to_string(run.signal) + said;
    if (run.exit_code != 0)
        return what + " failed (exit " + std::to_string(run.exit_code) + ")" + said;
    return {};
}

}  // namespace

// The command's standard error (and the file names of its argv) are text
// from elsewhere: the message goes through the printable filter before it
// reaches a log line, an answer or `hostkeeper status`.
std::string command_failure(const std::string& host, const TokenCommand& command,
                            const CommandRun& run) {
    return proto::printable(
        failure_text("token_command for " + host + " (" + command_name(command) + ")",
                     "token_command_timeout", command, run));
}

std::string program_failure(const std::string& what, const TokenCommand& command,
                            const CommandRun& run) {
    return proto::printable(failure_text(what, {}, command, run));
}

CommandTokens::CommandTokens(asio::any_io_executor io, asio::any_io_executor worker,
                             TokenCommandOptions options, Runner runner, Clock clock,
                             WallClock wall_clock)
    : io_(std::move(io)),
      worker_(std::move(worker)),
      options_(std::move(options)),
      runner_(std::move(runner)),
      clock_(std::move(clock)),
      wall_clock_(std::move(wall_clock)),
      flights_(io_) {
    if (!runner_)
        runner_ = [this](const TokenCommand& command) {
            return run_token_command(command, &running_);
        };
}

asio::awaitable<Secret> CommandTokens::get(std::string host) {
    if (!options_.refused.empty())
        throw Error(ErrorCode::token_command_failed,
                    "token_command for " + host + " not run: " + options_.refused);
    Entry& entry = entries_[host];
    const steady::time_point now = clock_();
    if (entry.credentials && entry.state.expires && now < *entry.state.expires) {
        if (now >= entry.refresh_at && !entry.state.running) start_refresh(host, entry);
        co_return entry.credentials->clone();
    }
    if (entry.failed_until && now < *entry.failed_until && !entry.state.running)
        throw Error(ErrorCode::token_command_failed, entry.state.last_error);
    auto running = shared_run(host);  // named first
    co_return co_await std::move(running);
}

asio::awaitable<CommandRun> CommandTokens::run_once(TokenCommand command) {
    if (!options_.refused.empty()) {
        CommandRun refused;
        refused.launch_error = "not run: " + options_.refused;
        co_return refused;
    }
    auto job = [runner = runner_, command = std::move(command)] { return runner(command); };
    co_return co_await async::on_worker(worker_, std::move(job));
}

asio::awaitable<Secret> CommandTokens::shared_run(const std::string& host) {
    // Named first.
    auto work = [this, host] { return fetch(host); };
    auto shared = flights_.run(host, std::move(work), clone);
    co_return co_await std::move(shared);
}

void CommandTokens::start_refresh(const std::string& host, Entry& entry) {
    entry.state.running = true;
    asio::co_spawn(io_, refresh(host), [host](const std::exception_ptr& failure) {
        if (failure) {
            spdlog::warn(
                "token_command for {} failed ahead of its token's expiry (see "
                "hostkeeper status); the current token is served until it expires",
                host);
        }
    });
}

asio::awaitable<void> CommandTokens::refresh(std::string host) {
    auto running = shared_run(host);  // named first
    (void)co_await std::move(running);
}

// One run of the host's command; its token kept, or its failure remembered.
asio::awaitable<Secret> CommandTokens::fetch(std::string host) {
    const TokenCommand& command = options_.hosts.at(host);
    Entry& entry = entries_[host];
    entry.state.running = true;
    const steady::time_point started = clock_();
    auto job = [runner = runner_, command] { return runner(command); };
    CommandRun run = co_await async::on_worker(worker_, std::move(job));
    entry.state.running = false;
    ++entry.state.runs;
    entry.state.last_run = clock_();
    try {
        keep(host, run, started);
    } catch (const Error& e) {
        entry.state.last_error = e.what();
        // The current token, when still valid, is tried again from half its time left;
        // without one, the failure answers the gets of the next kFailureBackoff.
        if (entry.state.expires && clock_() < *entry.state.expires)
            entry.refresh_at = clock_() + (*entry.state.expires - clock_()) / 2;
        else
            entry.failed_until = clock_() + kFailureBackoff;
        spdlog::debug("token_command for {}: run {} failed", host, entry.state.runs);
        throw;
    }
    spdlog::debug("token_command for {}: run {} gave a token", host, entry.state.runs);
    co_return entry.credentials->clone();
}

void CommandTokens::keep(const std::string& host, CommandRun& run, steady::time_point started) {
    const TokenCommand& command = options_.hosts.at(host);
    if (std::string failure = command_failure(host, command, run); !failure.empty())
        throw Error(ErrorCode::token_command_failed, failure);
    CommandOutput output;
    try {
        output = read_command_output(run.output.view());
    } catch (const CommandOutputError& e) {
        throw Error(ErrorCode::token_command_failed,
                    "token_command for " + host + " (" + command_name(command) + ") " + e.what());
    }
    const steady::time_point now = clock_();
    steady::time_point expires = started + command.ttl;
    if (output.expires_in) expires = started + *output.expires_in;
    if (output.expires_at)
        expires =
            now + std::chrono::duration_cast<steady::duration>(*output.expires_at - wall_clock_());
    if (expires <= now)
        throw Error(ErrorCode::token_command_failed,
                    "token_command for " + host + " (" + command_name(command) +
                        ") printed a token that has already expired");
    const steady::duration lifetime = expires - started;
    const steady::duration ahead = std::min<steady::duration>(lifetime / 10, kMaxRefreshAhead);
    Entry& entry = entries_[host];
    entry.credentials = credentials_object(output.token);
    entry.state.expires = expires;
    entry.state.last_error.clear();
    entry.failed_until.reset();
    entry.refresh_at = expires - ahead;
}

std::size_t CommandTokens::flush() {
    std::size_t flushed = 0;
    for (auto& [host, entry] : entries_) {
        if (entry.credentials || entry.failed_until) ++flushed;
        entry.credentials.reset();
        entry.state.expires.reset();
        entry.failed_until.reset();
    }
    return flushed;
}

std::size_t CommandTokens::flush(const std::string& host) {
    const auto it = entries_.find(host);
    if (it == entries_.end() || (!it->second.credentials && !it->second.failed_until)) return 0;
    it->second.credentials.reset();
    it->second.state.expires.reset();
    it->second.failed_until.reset();
    return 1;
}

std::map<std::string, CommandTokenState> CommandTokens::states() const {
    std::map<std::string, CommandTokenState> out;
    for (const auto& [host, command] : options_.hosts) {
        CommandTokenState state;
        if (const auto it = entries_.find(host); it != entries_.end()) state = it->second.state;
        if (!options_.refused.empty()) state.last_error = "not run: " + options_.refused;
        out.emplace(host, std::move(state));
    }
    return out;
}

}  // namespace hostkeeper::daemon::credentials
