#pragma once
// The registry cache's second way in: a run's own port. `hostkeeper exec
// --registry-cache` binds a loopback port for one run, holds it until the
// run ends, and asks this daemon (registry_run, PROTOCOL.md) to serve it:
// the daemon connects to the run's link socket (in a private directory of
// this user's, served by a process of this user's), receives the listening
// socket (SCM_RIGHTS) and accepts on it. Each connection's client is asked
// of the kernel (proto/sock_diag.hpp): another uid's connection is reset,
// this user's are handed to the door. The link's end (the run is over, or
// it hands the socket to another daemon) closes this daemon's copy. When
// the routed hosts change, the daemon tells each run on its link.

#include <boost/asio/any_io_executor.hpp>
#include <boost/asio/awaitable.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <functional>
#include <map>
#include <memory>
#include <string>

#include "daemon/credentials/run_tokens.hpp"
#include "proto/secret.hpp"
#include "proto/unique_fd.hpp"

namespace hostkeeper::daemon::registry_cache {

class RunPorts {
  public:
    using Handed = std::function<void(boost::asio::ip::tcp::socket)>;

    // `tokens`: where each run's tokens are held while it lasts.
    RunPorts(boost::asio::any_io_executor io, credentials::RunTokens& tokens)
        : io_(std::move(io)), tokens_(tokens) {}
    RunPorts(const RunPorts&) = delete;
    RunPorts& operator=(const RunPorts&) = delete;
    ~RunPorts() { stop(); }

    // Where this user's connections go (the door's listener).
    void hand_to(Handed handed) { handed_ = std::move(handed); }

    // Connects to the run's link socket `link` and, once the run passes it,
    // serves its listening socket, which must be a loopback TCP socket
    // listening on `port`. Throws proto::Error: bad_request for a link that
    // is not an absolute path to a socket in a private directory of this
    // user's, a port of 0, or a link that cannot be reached; forbidden for
    // a link another uid serves; internal when no door serves runs.
    // `tokens`: the run's own (host -> token), held until the run ends.
    void attach(const std::filesystem::path& link, std::uint16_t port,
                std::map<std::string, proto::Secret>&& tokens = {});

    // The routed hosts changed: each run told its host blocks is sent one
    // byte ('h') on its link, and asks for them again (registry_run_blocks).
    void hosts_changed();
    // The run attached with `port` is being given the host blocks of the
    // routes as they are now: only later changes are news to it.
    void told(std::uint16_t port);
    // Whether a run attached with `port` is being served.
    bool serves(std::uint16_t port) const;

    // The runs being served.
    std::size_t count() const { return runs_.size(); }
    // Connections of another uid reset so far.
    std::size_t refused() const { return refused_; }

    void stop();

    // Whether `fd` is a TCP socket listening on a loopback address at
    // `port`; "" when it is, else what it is not
    // (proto::loopback_listener_problem, or "not on port N").
    static std::string listener_problem(int fd, std::uint16_t port);

  private:
    struct Run;
    boost::asio::awaitable<void> follow(std::shared_ptr<Run> run);
    boost::asio::awaitable<void> accept_loop(std::shared_ptr<Run> run);
    // Whether the client of `socket` is this user's process.
    bool ours(boost::asio::ip::tcp::socket& socket);
    void end(std::uint64_t id);

    boost::asio::any_io_executor io_;
    credentials::RunTokens& tokens_;
    Handed handed_;
    std::map<std::uint64_t, std::shared_ptr<Run>> runs_;
    std::uint64_t next_id_ = 0;
    std::size_t refused_ = 0;
    proto::UniqueFd diag_{-1};  // NETLINK_SOCK_DIAG, opened at the first run
};

}  // namespace hostkeeper::daemon::registry_cache
