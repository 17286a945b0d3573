#pragma once
// The registry cache's front door: this daemon's registration with
// hostkeeper-portd (proto/port_link.hpp), which holds the registry port for
// every user of the machine and hands this daemon the connections of its
// own user's processes. The daemon never listens on TCP itself: the port
// Terraform is pointed at is one that no ordinary user can ever bind.
//
// It says what becomes of the port through PortEvents: while registered,
// RegistryCache points the tfrc files at the port. When the link ends (the
// service restarts), it registers again at once and then every few seconds;
// when no trustworthy service can be found (no socket, not root's, a port
// any user may bind), the files lose their blocks. When another daemon of
// the same user holds the registration, this one leaves it (and the files)
// to that one, says so once, and asks again after a pause that doubles each
// time up to kHeldRetryMax, so that it takes over only once the other one is
// gone.

#include <boost/asio/any_io_executor.hpp>
#include <boost/asio/awaitable.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/posix/stream_descriptor.hpp>
#include <boost/asio/steady_timer.hpp>
#include <chrono>
#include <cstdint>
#include <filesystem>
#include <functional>
#include <optional>
#include <string>

#include "proto/port_link.hpp"

namespace hostkeeper::daemon::registry_cache {

// What the link reports; any of them may be empty.
struct PortEvents {
    std::function<void(std::uint16_t port)> registered;
    std::function<void(const std::string& why)> lost;         // the link ended
    std::function<void(const std::string& why)> unavailable;  // no trustworthy service
    // Another daemon of this user holds the registration.
    std::function<void(const proto::PortHolder& holder)> held_elsewhere;
};

class PortLink {
  public:
    // Each connection handed over, already checked to be a TCP connection
    // to the registry port.
    using Handed = std::function<void(boost::asio::ip::tcp::socket)>;

    // `worker`: where the (bounded, blocking) reconnections run; `own_socket`:
    // this daemon's socket, named in its registration (empty: none).
    PortLink(boost::asio::io_context& io, boost::asio::any_io_executor worker,
             std::filesystem::path socket, PortEvents events, Handed handed,
             std::string own_socket = {});

    // Registers now, on the caller's thread (bounded by kConnectTimeout): the
    // daemon does so before it says it is ready, so that the Terraform whose
    // helper started it finds the registration in place. Then follows the
    // link on the event loop.
    void start();
    void stop();

    static constexpr std::chrono::milliseconds kConnectTimeout{2000};
    static constexpr std::chrono::seconds kRetry{3};
    // The pauses while another daemon of this user holds the registration.
    static constexpr std::chrono::seconds kHeldRetryFirst{1};
    static constexpr std::chrono::seconds kHeldRetryMax{60};

    // The pause after `previous` (zero: none yet) while the registration is held elsewhere.
    static std::chrono::seconds next_held_pause(std::chrono::seconds previous);

  private:
    boost::asio::awaitable<void> follow();
    // Takes each connection the service sent; false when the link ended.
    bool take_connections();
    void connected(int fd, std::uint16_t port);
    // Registering failed: the pause before the next attempt.
    void failed(const proto::PortServiceError& error);
    static proto::PortConnection connect(const std::filesystem::path& service,
                                         const std::string& own_socket);

    boost::asio::io_context& io_;
    boost::asio::any_io_executor worker_;
    std::filesystem::path socket_;
    PortEvents events_;
    Handed handed_;
    std::optional<boost::asio::posix::stream_descriptor> link_;
    boost::asio::steady_timer retry_;
    std::uint16_t port_ = 0;
    std::string own_socket_;
    std::string ended_;                        // why the link ended
    std::string last_failure_;                 // why the last registration failed (logged once)
    std::optional<proto::PortHolder> holder_;  // who holds it, while another daemon does
    std::chrono::seconds pause_{0};            // before the next attempt
    bool stopped_ = false;
};

}  // namespace hostkeeper::daemon::registry_cache
