#include "daemon/portd/port_service.hpp"

#include <fcntl.h>
#include <spdlog/spdlog.h>

#include <cerrno>
#include <cstring>
#include <stdexcept>
#include <utility>

#include "daemon/portd/port_state.hpp"
#include "daemon/portd/socket_calls.hpp"
#include "proto/sock_diag.hpp"

namespace hostkeeper::daemon::portd {

namespace asio = boost::asio;
using proto::UniqueFd;

namespace {

// Deadlines are checked this often while anything has one.
constexpr std::chrono::milliseconds kSweepInterval{100};

}  // namespace

void PortService::Impl::arm_sweep() {
    if (sweeping) return;
    sweeping = true;
    sweep_timer.expires_after(kSweepInterval);
    sweep_timer.async_wait([this](const boost::system::error_code& ec) {
        sweeping = false;
        if (ec) return;
        sweep();
    });
}

void PortService::Impl::sweep() {
    const Clock::time_point now = Clock::now();
    expire_pending(now);
    std::vector<std::uint64_t> late;
    for (const auto& [id, greeting] : greetings)
        if (greeting->deadline <= now) late.push_back(id);
    for (const std::uint64_t id : late) {
        std::unique_ptr<Greeting> greeting = take_greeting(id);
        ++counters.bad_links;
        if (worth_logging(counters.bad_links))
            spdlog::warn("link connection of uid {}: no request line in time", greeting->uid);
    }
    for (auto it = drains.begin(); it != drains.end();) {
        if (it->second->deadline <= now) {
            // Still open after the bound: reset, so no TIME_WAIT is left.
            reset_and_close(it->second->descriptor.release());
            it = drains.erase(it);
        } else {
            ++it;
        }
    }
    if (!pending.empty() || !greetings.empty() || !drains.empty()) arm_sweep();
}

PortService::PortService(asio::io_context& io, const std::vector<int>& tcp_listeners,
                         int link_listener, PortLimits limits)
    : impl_(std::make_unique<Impl>(io, limits)) {
    // Owned from here on, whatever is thrown below.
    std::vector<UniqueFd> owned;
    owned.reserve(tcp_listeners.size());
    for (const int fd : tcp_listeners) owned.emplace_back(fd);
    UniqueFd link(link_listener);

    if (owned.empty() || owned.size() > 2)
        throw std::runtime_error("the registry port needs one or two TCP listeners, not " +
                                 std::to_string(owned.size()));
    for (const UniqueFd& fd : owned) {
        if (std::string problem = tcp_listener_problem(fd.get()); !problem.empty())
            throw std::runtime_error("TCP listener (fd " + std::to_string(fd.get()) +
                                     "): " + problem);
        const std::uint16_t port = bound_port(fd.get());
        if (impl_->port != 0 && port != impl_->port)
            throw std::runtime_error("the TCP listeners are on different ports (" +
                                     std::to_string(impl_->port) + " and " + std::to_string(port) +
                                     "): the registry port is one port");
        impl_->port = port;
    }
    impl_->netlink = UniqueFd(proto::open_sock_diag());
    if (impl_->netlink.get() < 0)
        throw std::runtime_error(std::string("NETLINK_SOCK_DIAG socket: ") + std::strerror(errno));
    // Accepting never waits: the listeners are non-blocking (the accepted
    // connections are not: accept4 does not inherit the flag).
    for (UniqueFd& fd : owned) {
        const int flags = ::fcntl(fd.get(), F_GETFL);
        if (flags < 0 || ::fcntl(fd.get(), F_SETFL, flags | O_NONBLOCK) != 0)
            throw std::runtime_error(std::string("fcntl: ") + std::strerror(errno));
        impl_->tcp.push_back(std::make_unique<Impl::TcpListener>(io, fd.release()));
    }
    const int flags = ::fcntl(link.get(), F_GETFL);
    if (flags < 0 || ::fcntl(link.get(), F_SETFL, flags | O_NONBLOCK) != 0)
        throw std::runtime_error(std::string("fcntl: ") + std::strerror(errno));
    impl_->link_listener = std::make_unique<Impl::TcpListener>(io, link.release());
}

PortService::~PortService() = default;

void PortService::start() {
    for (auto& listener : impl_->tcp) impl_->accept_tcp(*listener);
    impl_->accept_links();
}

std::uint16_t PortService::port() const {
    return impl_->port;
}

const PortCounters& PortService::counters() const {
    return impl_->counters;
}

void PortService::log_counters() const {
    const PortCounters& c = impl_->counters;
    spdlog::info(
        "connections: {} accepted, {} handed, {} answered 503, {} reset (unknown owner), {} "
        "reset (over a bound); links: {} registrations ({} now), {} probes, {} refused or ended "
        "for what they sent, {} refused (their user had too many in flight), {} refused to a "
        "second daemon of a user",
        c.accepted, c.handed, c.unregistered, c.refused_unknown_owner, c.refused_full,
        c.registrations, impl_->links.size(), c.probes, c.bad_links, c.refused_greetings,
        c.second_daemons);
}

}  // namespace hostkeeper::daemon::portd
