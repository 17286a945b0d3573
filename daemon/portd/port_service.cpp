#include "daemon/portd/port_service.hpp"

#include <fcntl.h>
#include <spdlog/spdlog.h>

#include <cerrno>
#include <cstring>
#include <stdexcept>
#include <utility>

#include "daemon/portd/daemon_links.hpp"
#include "daemon/portd/deadline_sweep.hpp"
#include "daemon/portd/link_greetings.hpp"
#include "daemon/portd/port_budgets.hpp"
#include "daemon/portd/socket_calls.hpp"
#include "daemon/portd/tcp_connections.hpp"
#include "daemon/portd/unregistered_answers.hpp"
#include "daemon/portd/waiting_connections.hpp"
#include "proto/sock_diag.hpp"
#include "proto/tcp_listener.hpp"
#include "proto/unique_fd.hpp"

namespace hostkeeper::daemon::portd {

namespace asio = boost::asio;
using proto::UniqueFd;

namespace {

// Accepting never waits: the listeners are made non-blocking (the accepted
// connections are not: accept4 does not inherit the flag).
void make_non_blocking(const UniqueFd& fd) {
    const int flags = ::fcntl(fd.get(), F_GETFL);
    if (flags < 0 || ::fcntl(fd.get(), F_SETFL, flags | O_NONBLOCK) != 0)
        throw std::runtime_error(std::string("fcntl: ") + std::strerror(errno));
}

}  // namespace

// The parts of the service, each the owner of its table, wired to each
// other: a TCP connection goes from the intake to its user's daemon link, or
// waits for one in the waiting room and is answered 503 from there; a
// registration comes from the link socket's greetings.
struct PortService::Impl {
    Impl(asio::io_context& io, const PortLimits& limits, std::uint16_t registry_port,
         std::vector<UniqueFd> tcp, UniqueFd netlink, UniqueFd link_listener)
        : port(registry_port),
          budgets(limits),
          sweep(io),
          answers(io, limits, counters, sweep),
          waiting(
              limits, budgets.waiting, [this](uid_t uid) { return budgets.holder_of(uid); },
              counters, sweep, answers,
              [this](uid_t uid, UniqueFd fd) { links.deliver(uid, std::move(fd)); }),
          links(
              io, limits, registry_port, {budgets.queued, budgets.registrations}, counters,
              [this](uid_t uid, UniqueFd fd) { waiting.hold(uid, std::move(fd)); },
              [this](uid_t uid) { waiting.release(uid); }),
          greetings(
              io, std::move(link_listener), limits, registry_port, budgets.greetings,
              [this](uid_t uid) { return budgets.holder_of(uid); }, counters, sweep,
              [this](uid_t uid, BudgetHolder holder, UniqueFd fd, std::string socket) {
                  links.register_daemon(uid, holder, std::move(fd), std::move(socket));
              }),
          intake(io, std::move(tcp), std::move(netlink), limits.accepts_per_turn, counters,
                 [this](uid_t uid, UniqueFd fd) { links.deliver(uid, std::move(fd)); }) {
        sweep.add([this](Clock::time_point now) { return waiting.expire(now); });
        sweep.add([this](Clock::time_point now) { return greetings.expire(now); });
        sweep.add([this](Clock::time_point now) { return answers.expire(now); });
    }

    std::uint16_t port;
    PortCounters counters;
    // Declared before the tables whose entries hold its slots.
    PortBudgets budgets;
    DeadlineSweep sweep;
    UnregisteredAnswers answers;
    WaitingRoom waiting;
    DaemonLinks links;
    LinkGreetings greetings;
    TcpIntake intake;
};

PortService::PortService(asio::io_context& io, const std::vector<int>& tcp_listeners,
                         int link_listener, PortLimits limits) {
    // Owned from here on, whatever is thrown below.
    std::vector<UniqueFd> owned;
    owned.reserve(tcp_listeners.size());
    for (const int fd : tcp_listeners) owned.emplace_back(fd);
    UniqueFd link(link_listener);

    if (owned.empty() || owned.size() > 2)
        throw std::runtime_error("the registry port needs one or two TCP listeners, not " +
                                 std::to_string(owned.size()));
    std::uint16_t registry_port = 0;
    for (const UniqueFd& fd : owned) {
        if (std::string problem = proto::loopback_listener_problem(fd.get()); !problem.empty())
            throw std::runtime_error("TCP listener (fd " + std::to_string(fd.get()) +
                                     "): " + problem +
                                     ": the registry port serves only this machine's users");
        const std::uint16_t port = proto::bound_port(fd.get());
        if (registry_port != 0 && port != registry_port)
            throw std::runtime_error("the TCP listeners are on different ports (" +
                                     std::to_string(registry_port) + " and " +
                                     std::to_string(port) + "): the registry port is one port");
        registry_port = port;
    }
    UniqueFd netlink(proto::open_sock_diag());
    if (netlink.get() < 0)
        throw std::runtime_error(std::string("NETLINK_SOCK_DIAG socket: ") + std::strerror(errno));
    for (const UniqueFd& fd : owned) make_non_blocking(fd);
    make_non_blocking(link);
    impl_ = std::make_unique<Impl>(io, limits, registry_port, std::move(owned), std::move(netlink),
                                   std::move(link));
}

PortService::~PortService() = default;

void PortService::start() {
    impl_->intake.start();
    impl_->greetings.start();
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
