#include "helper/cli/registry_run.hpp"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <signal.h>
#include <sys/signalfd.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstring>
#include <filesystem>
#include <map>
#include <optional>
#include <string>
#include <system_error>

#include "helper/cli/run_directories.hpp"
#include "helper/cli/run_reaper.hpp"
#include "helper/client/exit_codes.hpp"
#include "helper/client/printable_output.hpp"
#include "helper/terraform_config/run_config.hpp"
#include "helper/terraform_config/token_variables.hpp"
#include "proto/error.hpp"
#include "proto/file_io.hpp"
#include "proto/messages.hpp"
#include "proto/port_link.hpp"
#include "proto/program_search.hpp"
#include "proto/sock_diag.hpp"
#include "proto/socket_path.hpp"
#include "proto/unique_fd.hpp"

namespace hostkeeper::helper::cli {
namespace fs = std::filesystem;
using proto::Json;
using proto::UniqueFd;

namespace {

constexpr std::chrono::seconds kRetry{2};
constexpr int kLinkWaitMs = 5000;

[[noreturn]] void fail(const std::string& what) {
    throw std::system_error(errno, std::generic_category(), what);
}

// A listening TCP socket on 127.0.0.1 at a port the kernel picks.
UniqueFd bind_run_port(std::uint16_t& port) {
    UniqueFd fd(::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0));
    if (fd.get() < 0) fail("socket");
    sockaddr_in address{};
    address.sin_family = AF_INET;
    address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    if (::bind(fd.get(), reinterpret_cast<const sockaddr*>(&address), sizeof address) != 0)
        fail("binding a loopback port");
    if (::listen(fd.get(), SOMAXCONN) != 0) fail("listening on the run's port");
    socklen_t len = sizeof address;
    if (::getsockname(fd.get(), reinterpret_cast<sockaddr*>(&address), &len) != 0)
        fail("the run's port");
    port = ntohs(address.sin_port);
    return fd;
}

UniqueFd listen_link(const fs::path& path) {
    UniqueFd fd(::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0));
    if (fd.get() < 0) fail("socket");
    const std::optional<sockaddr_un> address = proto::unix_address(path);
    if (!address) throw std::runtime_error("the run's link path is too long: " + path.string());
    if (::bind(fd.get(), reinterpret_cast<const sockaddr*>(&*address), sizeof *address) != 0)
        fail("binding the run's link " + path.string());
    if (::listen(fd.get(), 4) != 0) fail("listening on the run's link");
    return fd;
}

// The resources of one run, and its link to the daemon.
class Run {
  public:
    Run(const client::ClientOptions& client, terraform_config::RunConfig config,
        std::map<std::string, proto::Secret> tokens)
        : client_(client), config_(std::move(config)), tokens_(std::move(tokens)) {}
    Run(const Run&) = delete;
    Run& operator=(const Run&) = delete;
    ~Run() {
        std::error_code ignored;
        if (!dir_.empty()) fs::remove_all(dir_, ignored);
    }

    // Binds the port, makes the directory and the link; asks the daemon.
    void prepare();
    fs::path config_file() const { return dir_ / "terraform.tfrc"; }
    // Follows the run until no process of it is left; COMMAND's status.
    int follow(pid_t reaper, int signals);
    // What the reaper must not hold.
    std::vector<int> descriptors() const {
        return {port_fd_.get(), link_listener_.get(), link_.get(), diag_.get()};
    }

  private:
    // Asks the daemon to serve the port and hands it the socket; writes the
    // configuration the first time. False (with a message) when it failed.
    bool attach(bool first);
    // Asks the daemon for the host blocks again (its routed hosts changed)
    // and rewrites the configuration with them.
    void refresh_blocks();
    // Writes the run's configuration with the daemon's host `blocks`, in one step.
    void write_config(const std::string& blocks) const {
        proto::write_file_atomically(config_file(),
                                     terraform_config::run_config_text(config_, blocks), 0600);
    }
    void answer_unserved();
    static bool reap(pid_t reaper, int& status);

    const client::ClientOptions& client_;
    terraform_config::RunConfig config_;
    std::map<std::string, proto::Secret> tokens_;  // the run's TF_TOKEN_* (host -> token)
    fs::path dir_;
    UniqueFd port_fd_{-1};
    UniqueFd link_listener_{-1};
    UniqueFd link_{-1};  // the daemon's connection, while it serves the port
    UniqueFd diag_{-1};
    std::uint16_t port_ = 0;
    std::string why_;  // why no daemon serves the port now
    std::chrono::steady_clock::time_point next_attempt_{};
};

void Run::prepare() {
    port_fd_ = bind_run_port(port_);
    dir_ = make_run_directory(socket_location(client_));
    link_listener_ = listen_link(dir_ / "link.sock");
    diag_ = UniqueFd(proto::open_sock_diag());
    if (!attach(true)) throw std::runtime_error(why_);
}

// The daemon's connection to the link, once it has asked for the socket.
UniqueFd accept_daemon(int listener) {
    pollfd waiting{listener, POLLIN, 0};
    if (::poll(&waiting, 1, kLinkWaitMs) != 1) return UniqueFd(-1);
    UniqueFd fd(::accept4(listener, nullptr, nullptr, SOCK_CLOEXEC));
    const std::optional<proto::PeerCredentials> peer =
        fd.get() < 0 ? std::nullopt : proto::peer_credentials(fd.get());
    if (!peer || peer->uid != ::geteuid()) return UniqueFd(-1);
    return fd;
}

bool Run::attach(bool first) {
    try {
        Json request = proto::make_request(proto::Op::registry_run);
        request["link"] = (dir_ / "link.sock").string();
        request["port"] = port_;
        request["hosts"] = config_.hosts;
        request["kept"] = config_.kept_hosts;
        request["tokens"] = Json::object();
        for (const auto& [host, token] : tokens_) request["tokens"][host] = token.view();
        const proto::ScrubGuard guard(request);
        const Json answer = client::DaemonClient(client_).call(request);
        const std::string& blocks = client::answer_string(answer, "registry_run", "tfrc");
        UniqueFd link = accept_daemon(link_listener_.get());
        if (link.get() < 0 || !proto::send_handed_connection(link.get(), port_fd_.get()))
            throw std::runtime_error("hostkeeperd did not take the run's port");
        if (first) write_config(blocks);
        link_ = std::move(link);
        why_.clear();
        return true;
    } catch (const std::exception& e) {
        why_ = e.what();
        next_attempt_ = std::chrono::steady_clock::now() + kRetry;
        return false;
    }
}

void Run::refresh_blocks() {
    try {
        Json request = proto::make_request(proto::Op::registry_run_blocks);
        request["port"] = port_;
        request["kept"] = config_.kept_hosts;
        const Json answer = client::DaemonClient(client_).call(request);
        const std::string& blocks = client::answer_string(answer, "registry_run_blocks", "tfrc");
        write_config(blocks);
    } catch (const std::exception& e) {
        client::print_printable(
            stderr, "hostkeeper exec: the run's host blocks are not updated: %s\n", e.what());
    }
}

// While no daemon serves the port: each connection of this user's gets a
// 503 naming the reason; another uid's is reset.
void Run::answer_unserved() {
    UniqueFd fd(::accept4(port_fd_.get(), nullptr, nullptr, SOCK_CLOEXEC | SOCK_NONBLOCK));
    if (fd.get() < 0) return;
    if (proto::connection_owner(diag_.get(), fd.get()) != ::geteuid()) {
        proto::reset_on_close(fd.get());
        return;
    }
    const Json body = {{"errors", Json::array({"hostkeeperd is not serving this run's registry "
                                               "cache now (" +
                                               why_ + "); it is being started again"})}};
    const std::string text = body.dump(-1, ' ', true, Json::error_handler_t::replace);
    const std::string response =
        "HTTP/1.1 503 Service Unavailable\r\nContent-Type: "
        "application/json\r\nRetry-After: 2\r\nConnection: close\r\n"
        "Content-Length: " +
        std::to_string(text.size()) + "\r\n\r\n" + text;
    char discard[4096];
    while (::recv(fd.get(), discard, sizeof discard, 0) > 0) {
    }
    [[maybe_unused]] const ssize_t sent =
        ::send(fd.get(), response.data(), response.size(), MSG_NOSIGNAL);
    ::shutdown(fd.get(), SHUT_WR);
}

// Collects the exited children (the reaper, daemons this run started);
// true once the reaper has exited, with its status in `status`.
bool Run::reap(pid_t reaper, int& status) {
    for (;;) {
        int raw = 0;
        const pid_t pid = ::waitpid(-1, &raw, WNOHANG);
        if (pid <= 0) return false;
        if (pid == reaper) {
            status = exit_status(raw);
            return true;
        }
    }
}

int Run::follow(pid_t reaper, int signals) {
    int status = client::kExitFailed;
    for (;;) {
        pollfd fds[3] = {{signals, POLLIN, 0},
                         {link_.get(), POLLIN, 0},
                         {link_.get() < 0 ? port_fd_.get() : -1, POLLIN, 0}};
        ::poll(fds, 3, link_.get() < 0 ? 500 : -1);
        if ((fds[0].revents & POLLIN) != 0) {
            signalfd_siginfo info{};
            if (::read(signals, &info, sizeof info) == static_cast<ssize_t>(sizeof info) &&
                info.ssi_signo != SIGCHLD && info.ssi_code != SI_KERNEL) {
                // Sent to the run itself (a terminal's ^C reaches COMMAND
                // directly: passing it on would make it two).
                ::kill(reaper, static_cast<int>(info.ssi_signo));
            }
            if (reap(reaper, status)) return status;
        }
        if (fds[1].revents != 0) {
            char news[64];
            const ssize_t got = ::recv(link_.get(), news, sizeof news, MSG_DONTWAIT);
            if (got <= 0) {
                link_ = UniqueFd(-1);
                why_ = "hostkeeperd has gone";
                client::print_printable(stderr, "hostkeeper exec: %s; starting it again\n",
                                        why_.c_str());
                attach(false);
            } else if (std::memchr(news, 'h', static_cast<std::size_t>(got)) != nullptr) {
                refresh_blocks();
            }
        }
        if ((fds[2].revents & POLLIN) != 0) answer_unserved();
        if (link_.get() < 0 && std::chrono::steady_clock::now() >= next_attempt_) attach(false);
    }
}

// The tokens of `environment`'s TF_TOKEN_* variables, by host.
std::map<std::string, proto::Secret> environment_tokens(
    const std::vector<proto::Secret>& environment) {
    std::map<std::string, proto::Secret> tokens;
    for (const auto& entry : environment) {
        const std::string_view text = entry.view();
        const std::size_t equals = text.find('=');
        if (equals == std::string_view::npos || equals + 1 == text.size()) continue;
        const std::string_view name = text.substr(0, equals);
        if (name.substr(0, terraform_config::kTokenVariablePrefix.size()) !=
            terraform_config::kTokenVariablePrefix)
            continue;
        if (const auto host = terraform_config::decode_token_variable(name))
            tokens.insert_or_assign(*host, proto::Secret(text.substr(equals + 1)));
    }
    return tokens;
}

// COMMAND's environment: `environment` and `passed` (the credentials
// blocks' tokens as TF_TOKEN_* entries), with TF_CLI_CONFIG_FILE naming
// `config`.
std::vector<std::string> command_environment(const std::vector<proto::Secret>& environment,
                                             const std::vector<proto::Secret>& passed,
                                             const fs::path& config) {
    std::vector<std::string> entries;
    for (const auto& entry : environment) {
        const std::string_view text = entry.view();
        if (text.rfind("TF_CLI_CONFIG_FILE=", 0) == 0 || text.rfind("TERRAFORM_CONFIG=", 0) == 0)
            continue;
        entries.emplace_back(text);
    }
    for (const auto& entry : passed) entries.emplace_back(entry.view());
    entries.push_back("TF_CLI_CONFIG_FILE=" + config.string());
    return entries;
}

// Moves the tokens of the user's credentials blocks out of `config` into
// `tokens` (for the daemon) and `passed` (as COMMAND's TF_TOKEN_* entries),
// except for hosts that already have a variable, which Terraform reads
// first. False (with a message) for a host no variable can name.
bool pass_block_tokens(terraform_config::RunConfig& config,
                       std::map<std::string, proto::Secret>& tokens,
                       std::vector<proto::Secret>& passed) {
    for (auto& [host, token] : config.tokens) {
        if (tokens.count(host) != 0) continue;
        const auto name = terraform_config::encode_token_variable(host);
        if (!name) {
            client::print_printable(stderr,
                                    "hostkeeper exec: credentials \"%s\": no TF_TOKEN_ variable "
                                    "can name this host, so its token cannot reach the run "
                                    "without writing it to disk; nothing was run\n",
                                    host.c_str());
            return false;
        }
        if (!terraform_config::shell_portable(*name)) {
            client::print_printable(stderr,
                                    "hostkeeper exec: credentials \"%s\": its token reaches "
                                    "COMMAND as %s, a name a POSIX sh such as dash drops: start "
                                    "terraform directly or from bash\n",
                                    host.c_str(), name->c_str());
        }
        std::string entry = *name + "=";
        entry += token.view();
        passed.push_back(proto::Secret::adopt(entry));
        tokens.emplace(host, std::move(token));
    }
    config.tokens.clear();
    return true;
}

}  // namespace

int run_with_registry_cache(const client::ClientOptions& client,
                            const std::vector<std::string>& command,
                            const std::vector<proto::Secret>& environment) {
    if (!proto::find_program_on_path(command.front())) {
        client::print_printable(stderr, "hostkeeper exec: %s: command not found\n",
                                command.front().c_str());
        return client::kExitCommandNotFound;
    }
    std::vector<std::string> names;
    for (const auto& entry : environment) {
        const std::string_view text = entry.view();
        names.emplace_back(text.substr(0, text.find('=')));
    }
    terraform_config::RunConfig config;
    try {
        const terraform_config::ToolPaths terraform =
            terraform_config::locate(terraform_config::Tool::terraform);
        const terraform_config::ToolPaths opentofu =
            terraform_config::locate(terraform_config::Tool::opentofu);
        const terraform_config::Tool tool =
            terraform_config::run_tool(command.front(), terraform_config::tool_present(terraform),
                                       terraform_config::tool_present(opentofu));
        config = terraform_config::read_run_config(
            tool == terraform_config::Tool::opentofu ? opentofu : terraform, names);
    } catch (const terraform_config::CliConfigError& e) {
        client::print_printable(stderr, "hostkeeper exec: %s; nothing was run\n", e.what());
        return client::kExitUsage;
    }
    for (const auto& host : config.kept_hosts) {
        client::print_printable(stderr,
                                "hostkeeper exec: %s keeps your own host block: its requests "
                                "do not go through the run's registry cache\n",
                                host.c_str());
    }
    std::map<std::string, proto::Secret> tokens = environment_tokens(environment);
    std::vector<proto::Secret> passed;
    if (!pass_block_tokens(config, tokens, passed)) return client::kExitUsage;
    sigset_t blocked;
    sigset_t previous;
    sigemptyset(&blocked);
    for (const int sig : {SIGCHLD, SIGINT, SIGTERM, SIGHUP}) sigaddset(&blocked, sig);
    ::sigprocmask(SIG_BLOCK, &blocked, &previous);
    Run run(client, std::move(config), std::move(tokens));
    try {
        run.prepare();
    } catch (const std::exception& e) {
        client::print_printable(stderr, "hostkeeper exec: the run's registry cache: %s\n",
                                e.what());
        ::sigprocmask(SIG_SETMASK, &previous, nullptr);
        return client::kExitFailed;
    }
    UniqueFd signals(::signalfd(-1, &blocked, SFD_CLOEXEC));
    std::vector<int> held = run.descriptors();
    held.push_back(signals.get());
    std::vector<std::string> entries = command_environment(environment, passed, run.config_file());
    const pid_t reaper = start_reaper(command, entries, previous, held);
    for (auto& entry : entries) proto::scrub(entry);
    if (reaper < 0 || signals.get() < 0) {
        client::print_printable(stderr, "hostkeeper exec: cannot start %s: %s\n",
                                command.front().c_str(), std::strerror(errno));
        return client::kExitFailed;
    }
    return run.follow(reaper, signals.get());
}

}  // namespace hostkeeper::helper::cli
