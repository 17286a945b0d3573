#pragma once
// hostkeeper-portd's work, on one io_context (one thread): the registry
// port's loopback TCP listeners and the Unix socket where users' daemons
// register (proto/port_link.hpp). Each TCP connection goes to the daemon of
// the user whose process is at its client end (sock_diag.hpp asks the
// kernel), or, while that user has none, waits briefly for one and is then
// answered 503; a connection whose owner is unknown is reset. Nothing here
// blocks but the one netlink round trip of each connection.

#include <sys/types.h>

#include <boost/asio/io_context.hpp>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

namespace hostkeeper::daemon::portd {

// The bounds that keep one user from holding the service for others. Each
// table is counted per login user, not per uid: a user's subordinate uids
// (/etc/subuid) count against their own budget, and the subordinate uids no
// user owns share one (uid_owners.hpp). Its last `*_reserved` slots go only
// to a user who holds none of it yet (budget.hpp).
struct PortLimits {
    // Handed connections waiting for a registered daemon's link to drain.
    std::size_t queued_per_user = 64;
    std::size_t queued_total = 4096;
    std::size_t queued_reserved = 1024;
    // Connections waiting for their user's daemon to register, and how long.
    std::size_t pending_per_user = 16;
    std::size_t pending_total = 512;
    std::size_t pending_reserved = 128;
    std::chrono::milliseconds pending_wait{2000};
    // Daemons registered at once (one per uid: a user's own, and those of
    // their containers' uids).
    std::size_t registrations_per_user = 16;
    std::size_t registrations = 4096;
    std::size_t registrations_reserved = 1024;
    // Link connections that have not sent their request line yet, and how
    // long they may take.
    std::size_t greetings_per_user = 8;
    std::size_t greetings_total = 256;
    std::size_t greetings_reserved = 64;
    std::chrono::milliseconds greeting_deadline{5000};
    // Connections answered 503, read until their client closes: how many at
    // once, how much of each and for how long.
    std::size_t draining = 512;
    std::size_t drain_bytes = 65536;
    std::chrono::milliseconds drain_deadline{2000};
    // Connections accepted from one listener before others get their turn.
    std::size_t accepts_per_turn = 64;
    // A registered daemon keeps its user's registration against a second
    // daemon of the user unless its link has had handed connections unread
    // at each of the second one's attempts over this long (it is wedged).
    std::chrono::milliseconds wedged_link{30000};
};

// What happened since the start, for the log and tests.
struct PortCounters {
    std::uint64_t accepted = 0;
    std::uint64_t handed = 0;
    std::uint64_t refused_unknown_owner = 0;  // reset: the kernel named no owner
    std::uint64_t refused_full = 0;           // reset: over a queue's bound
    std::uint64_t unregistered = 0;           // answered 503
    std::uint64_t registrations = 0;
    std::uint64_t probes = 0;
    std::uint64_t bad_links = 0;          // link connections refused or ended for what they sent
    std::uint64_t refused_greetings = 0;  // answered "error": their user has too many in flight
    std::uint64_t second_daemons = 0;     // registrations refused: the user's daemon holds it
};

// The answer to a connection of `uid` whose daemon did not register in time.
std::string unregistered_response(uid_t uid, std::chrono::milliseconds waited);

class PortService {
  public:
    // Takes the listening sockets: `tcp_listeners` (one or two, all on the
    // same port) and `link_listener` (the Unix socket), and opens its
    // NETLINK_SOCK_DIAG socket. Throws std::runtime_error when they do not
    // fit. The descriptors are closed with the service.
    PortService(boost::asio::io_context& io, const std::vector<int>& tcp_listeners,
                int link_listener, PortLimits limits = {});
    PortService(const PortService&) = delete;
    PortService& operator=(const PortService&) = delete;
    // Destroy only once the io_context no longer runs.
    ~PortService();

    // Starts accepting on every listener.
    void start();
    // The registry port.
    std::uint16_t port() const;
    const PortCounters& counters() const;
    // Logs the counters (SIGUSR1, and at exit).
    void log_counters() const;

  private:
    struct Impl;
    std::unique_ptr<Impl> impl_;
};

}  // namespace hostkeeper::daemon::portd
