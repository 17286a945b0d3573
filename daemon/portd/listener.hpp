#pragma once
// One listening socket of hostkeeper-portd (a registry port TCP listener, or
// the link socket): its connections accepted a bounded number per turn and
// given to its owner; accepting pauses briefly after a failure (the process
// out of descriptors).

#include <boost/asio/io_context.hpp>
#include <boost/asio/steady_timer.hpp>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <string>

#include "daemon/portd/handler_basics.hpp"
#include "proto/unique_fd.hpp"

namespace hostkeeper::daemon::portd {

class Listener {
  public:
    using Accepted = std::function<void(proto::UniqueFd)>;

    // `fd`: a non-blocking listening socket. `name` names it in the log;
    // `failures` counts the accept failures of every listener given it.
    Listener(boost::asio::io_context& io, proto::UniqueFd fd, std::size_t accepts_per_turn,
             std::string name, std::uint64_t& failures, Accepted accepted);
    Listener(const Listener&) = delete;
    Listener& operator=(const Listener&) = delete;
    ~Listener() = default;

    // Accepts up to accepts_per_turn connections, then lets the others run;
    // waits for readiness only once the backlog is empty (the reactor
    // reports edges).
    void accept();

  private:
    void wait();
    void pause();

    boost::asio::io_context& io_;
    Descriptor descriptor_;
    boost::asio::steady_timer pause_;
    std::size_t accepts_per_turn_;
    std::string name_;
    std::uint64_t& failures_;
    Accepted accepted_;
};

}  // namespace hostkeeper::daemon::portd
