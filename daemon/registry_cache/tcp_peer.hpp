#pragma once
// Whose process is at the other end of a loopback TCP connection. TCP has no
// SO_PEERCRED; the kernel's socket table (/proc/net/tcp) lists the client's
// end of the connection with its owner's uid, as `ss -e` shows it. Inside a
// user namespace (the unit's PrivateUsers=) other users read as the overflow
// uid, and the daemon's own as itself.

#include <sys/types.h>

#include <boost/asio/ip/tcp.hpp>
#include <optional>
#include <string>
#include <string_view>

namespace hostkeeper::daemon::registry_cache {

// The uid owning the IPv4 socket at `peer` connected to `local` (our end);
// nullopt when the table has no such connection (it closed) or is unreadable.
std::optional<uid_t> loopback_peer_uid(const boost::asio::ip::tcp::endpoint& local,
                                       const boost::asio::ip::tcp::endpoint& peer);

// The same, from `table` (the text of /proc/net/tcp): for tests.
std::optional<uid_t> peer_uid_in(std::string_view table,
                                 const boost::asio::ip::tcp::endpoint& local,
                                 const boost::asio::ip::tcp::endpoint& peer);

}  // namespace hostkeeper::daemon::registry_cache
