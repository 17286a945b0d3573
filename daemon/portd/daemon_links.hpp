#pragma once
// The links of registered daemons, one per uid: connections handed over them
// (or queued while a link is full), their silence watched, registrations
// made and ended; a registration is kept by its holder against a second
// daemon of the user unless its link is wedged.

#include <sys/types.h>

#include <boost/asio/io_context.hpp>
#include <cstdint>
#include <deque>
#include <functional>
#include <memory>
#include <string>
#include <unordered_map>
#include <utility>

#include "daemon/portd/budget.hpp"
#include "daemon/portd/handler_basics.hpp"
#include "daemon/portd/port_service.hpp"
#include "proto/unique_fd.hpp"

namespace hostkeeper::daemon::portd {

class DaemonLinks {
  public:
    // Takes a connection of a uid with no registered daemon.
    using Hold = std::function<void(uid_t, proto::UniqueFd)>;
    // Gives back what was held for a uid whose daemon just registered.
    using Release = std::function<void(uid_t)>;

    struct Budgets {
        Budget& queued;         // handed connections a link could not take yet
        Budget& registrations;  // registered daemons
    };

    // `port`: the registry port, confirmed to each registration.
    DaemonLinks(boost::asio::io_context& io, const PortLimits& limits, std::uint16_t port,
                Budgets budgets, PortCounters& counters, Hold hold, Release release)
        : io_(io),
          limits_(limits),
          port_(port),
          budgets_(budgets),
          counters_(counters),
          hold_(std::move(hold)),
          release_(std::move(release)) {}

    // Hands the connection `fd` to the daemon of `uid`, or holds it while
    // `uid` has none.
    void deliver(uid_t uid, proto::UniqueFd fd);

    // Registers the daemon at the link connection `fd` of `uid` (its request
    // line read; `holder`: whose budget it counts against), or answers why
    // not. `socket`: the daemon's own, when its request named it.
    void register_daemon(uid_t uid, BudgetHolder holder, proto::UniqueFd fd, std::string socket);

    // Daemons registered now.
    std::size_t size() const { return links_.size(); }

  private:
    // A handed connection the link could not take yet.
    struct Queued {
        proto::UniqueFd fd{-1};
        Budget::Slot slot;  // of budgets_.queued
    };
    // A registered daemon: its link, and what could not be handed yet.
    // Its slot is of budgets_.registrations.
    struct Link : HeldConnection {
        Link(boost::asio::io_context& io, int fd, uid_t owner, BudgetHolder holder_of_owner,
             std::uint64_t number, Budget::Slot registration)
            : HeldConnection(io, fd, owner, holder_of_owner, std::move(registration)), id(number) {}
        std::uint64_t id;
        std::deque<Queued> queue;
        bool writing = false;
        // Who registered: named to a second daemon of the user.
        pid_t pid = 0;
        std::string socket;
        // When a second daemon first found handed connections unread here
        // (the epoch while none were).
        Clock::time_point unread_since{};
    };

    void hand(Link& link, proto::UniqueFd fd);

    void wait_writable(Link& link);

    void flush_queue(Link& link);

    Link* find_link(uid_t uid, std::uint64_t id);

    // Ends the registration of `uid`: its link closes, and what was queued for
    // it waits for the next registration like any other connection.
    void end_link(uid_t uid, const std::string& why);

    // A registered link must stay silent: EOF, an error or any byte from the
    // daemon ends the registration.
    void watch(Link& link);

    // Why a registered link is no longer silent; empty while it is.
    static std::string silence_broken(int fd);

    // Whether a second registration of `link`'s user may replace it: its
    // link ended, or it left handed connections unread over wedged_link.
    // Ends it then.
    bool replaceable(Link& link, pid_t newcomer);

    boost::asio::io_context& io_;
    PortLimits limits_;
    std::uint16_t port_;
    Budgets budgets_;
    PortCounters& counters_;
    Hold hold_;
    Release release_;
    std::unordered_map<uid_t, std::unique_ptr<Link>> links_;
    std::uint64_t next_id_ = 0;
};

}  // namespace hostkeeper::daemon::portd
