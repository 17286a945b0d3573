#pragma once
// The registry cache's one door: where Terraform's and OpenTofu's registry
// requests enter and are answered. It owns both ends: the connections (the
// ones hostkeeper-portd hands over through the port link, those of this
// user's on a run's own port (RunPorts), and any other connection of this
// user's given to adopt()) and the HTTP listener that
// reads each request and hands it to the handler: the registry cache's gate,
// or, in a daemon that cannot run with its configuration, one fixed answer.
// What becomes of the registry port is told to the registry cache.

#include <boost/asio/any_io_executor.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <optional>
#include <string>

#include "daemon/registry_cache/http_listener.hpp"
#include "daemon/registry_cache/listener_messages.hpp"
#include "daemon/registry_cache/port_link.hpp"

// Held by reference: declared, not included.
namespace hostkeeper::daemon::server {
class Server;
}

namespace hostkeeper::daemon::registry_cache {

class RegistryCache;

class RegistryDoor {
  public:
    // Requests answered by `cache`'s gate. Each one let in counts as a
    // client of `clients`, the daemon's socket server (its idle timer).
    RegistryDoor(boost::asio::io_context& io, RegistryCache& cache, server::Server& clients);
    // Each connection's first request answered with `fixed`, then closed.
    RegistryDoor(boost::asio::io_context& io, ListenerResponse fixed, server::Server& clients);
    RegistryDoor(const RegistryDoor&) = delete;
    RegistryDoor& operator=(const RegistryDoor&) = delete;
    ~RegistryDoor() = default;

    // Registers with hostkeeper-portd and serves the connections it hands
    // over. `worker`: where the link's (bounded, blocking) reconnections
    // run; `own_socket`: this daemon's socket, named in its registration.
    void open_port(boost::asio::any_io_executor worker, const std::string& own_socket);

    // Serves one connection of this user's.
    void adopt(boost::asio::ip::tcp::socket socket) { listener_.adopt(std::move(socket)); }

    void stop();

  private:
    boost::asio::io_context& io_;
    PortEvents events_;  // to the registry cache; none for a fixed answer
    HttpListener listener_;
    std::optional<PortLink> link_;
};

}  // namespace hostkeeper::daemon::registry_cache
