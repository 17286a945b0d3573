#pragma once
// The registry port's TCP connections: accepted on its listeners, their
// owner asked of the kernel (NETLINK_SOCK_DIAG, proto/sock_diag.hpp), then
// given on with that uid; a connection whose owner the kernel does not name
// is reset.

#include <sys/types.h>

#include <boost/asio/io_context.hpp>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <vector>

#include "daemon/portd/listener.hpp"
#include "daemon/portd/port_service.hpp"
#include "proto/unique_fd.hpp"

namespace hostkeeper::daemon::portd {

class TcpIntake {
  public:
    // Takes a connection whose owner is `uid`.
    using Deliver = std::function<void(uid_t uid, proto::UniqueFd fd)>;

    // `listeners`: non-blocking, on the registry port; `netlink`: a
    // NETLINK_SOCK_DIAG socket.
    TcpIntake(boost::asio::io_context& io, std::vector<proto::UniqueFd> listeners,
              proto::UniqueFd netlink, std::size_t accepts_per_turn, PortCounters& counters,
              Deliver deliver);

    // Starts accepting on every listener.
    void start();

  private:
    void on_connection(proto::UniqueFd fd);

    proto::UniqueFd netlink_;
    PortCounters& counters_;
    Deliver deliver_;
    std::uint64_t accept_failures_ = 0;  // of all the listeners
    // Last: their handlers use the members above.
    std::vector<std::unique_ptr<Listener>> listeners_;
};

}  // namespace hostkeeper::daemon::portd
