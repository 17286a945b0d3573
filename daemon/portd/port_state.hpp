#pragma once
// PortService's state on its one thread, and the handlers that share it, by
// concern: the registry port's TCP connections (tcp_connections.cpp), the
// links of registered daemons (daemon_links.cpp), connections waiting for a
// registration and their 503 answers (waiting_connections.cpp), the link
// socket's greetings (link_greetings.cpp) and the deadlines
// (port_service.cpp).

#include <sys/types.h>

#include <boost/asio/io_context.hpp>
#include <boost/asio/posix/stream_descriptor.hpp>
#include <boost/asio/steady_timer.hpp>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <deque>
#include <memory>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "daemon/portd/port_budgets.hpp"
#include "daemon/portd/port_service.hpp"
#include "proto/unique_fd.hpp"

namespace hostkeeper::daemon::portd {

using Clock = std::chrono::steady_clock;
using Descriptor = boost::asio::posix::stream_descriptor;

// How long accepting pauses when the process is out of descriptors.
inline constexpr std::chrono::milliseconds kAcceptPause{100};

// Refusals are logged the first few times, then at every power of two, with
// the count: a flood cannot flood the journal.
inline bool worth_logging(std::uint64_t count) {
    return count <= 5 || (count & (count - 1)) == 0;
}

struct PortService::Impl {
    using UniqueFd = proto::UniqueFd;

    // A TCP connection waiting for its user's daemon to register.
    struct Pending {
        uid_t uid = 0;
        UniqueFd fd{-1};
        Clock::time_point deadline;
        Budget::Slot slot;  // of budgets.waiting
    };
    // A handed connection the link could not take yet.
    struct Queued {
        UniqueFd fd{-1};
        Budget::Slot slot;  // of budgets.queued
    };
    // A registered daemon: its link, and what could not be handed yet.
    struct Link {
        Link(boost::asio::io_context& io, int fd, uid_t owner, BudgetHolder holder_of_owner,
             std::uint64_t number, Budget::Slot registration)
            : descriptor(io, fd),
              uid(owner),
              holder(holder_of_owner),
              id(number),
              slot(std::move(registration)) {}
        Descriptor descriptor;
        uid_t uid;
        BudgetHolder holder;
        std::uint64_t id;
        Budget::Slot slot;  // of budgets.registrations
        std::deque<Queued> queue;
        bool writing = false;
        // Who registered: named to a second daemon of the user.
        pid_t pid = 0;
        std::string socket;
        // When a second daemon first found handed connections unread here
        // (the epoch while none were).
        Clock::time_point unread_since{};
    };
    // A link connection that has not sent its request line yet.
    struct Greeting {
        Greeting(boost::asio::io_context& io, int fd, uid_t owner, BudgetHolder holder_of_owner,
                 Clock::time_point until, Budget::Slot taken)
            : descriptor(io, fd),
              uid(owner),
              holder(holder_of_owner),
              deadline(until),
              slot(std::move(taken)) {}
        Descriptor descriptor;
        uid_t uid;
        BudgetHolder holder;
        Clock::time_point deadline;
        Budget::Slot slot;  // of budgets.greetings
    };
    // A connection answered 503: read until its client closes, so that
    // closing it does not reset the answer away.
    struct Drain {
        Drain(boost::asio::io_context& io, int fd, Clock::time_point until)
            : descriptor(io, fd), deadline(until) {}
        Descriptor descriptor;
        Clock::time_point deadline;
        std::size_t bytes = 0;
    };
    struct TcpListener {
        TcpListener(boost::asio::io_context& io, int fd) : descriptor(io, fd), pause(io) {}
        Descriptor descriptor;
        boost::asio::steady_timer pause;
    };

    boost::asio::io_context& io;
    PortLimits limits;
    std::uint16_t port = 0;
    UniqueFd netlink{-1};
    std::vector<std::unique_ptr<TcpListener>> tcp;
    std::unique_ptr<TcpListener> link_listener;
    boost::asio::steady_timer sweep_timer;
    bool sweeping = false;
    PortCounters counters;
    // Declared before the tables whose entries hold its slots.
    PortBudgets budgets;

    std::deque<Pending> pending;  // in arrival order: deadlines ascend
    std::unordered_map<uid_t, std::unique_ptr<Link>> links;
    std::unordered_map<std::uint64_t, std::unique_ptr<Greeting>> greetings;
    std::unordered_map<std::uint64_t, std::unique_ptr<Drain>> drains;
    std::uint64_t next_id = 0;

    Impl(boost::asio::io_context& context, PortLimits bounds)
        : io(context), limits(bounds), sweep_timer(context), budgets(bounds) {}

    // ---- TCP: accept, look the owner up, deliver -------------------------

    void wait_tcp(TcpListener& listener);

    void pause_tcp(TcpListener& listener);

    // Accepts up to accepts_per_turn connections, then lets the others run;
    // waits for readiness only once the backlog is empty (the reactor
    // reports edges).
    void accept_tcp(TcpListener& listener);

    void on_connection(UniqueFd fd);

    void deliver(uid_t uid, UniqueFd fd);

    void refuse_full(uid_t uid, UniqueFd fd, std::string_view what);

    // ---- registered daemons ----------------------------------------------

    void hand(Link& link, UniqueFd fd);

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

    // `socket`: the daemon's own, when its request named it.
    void register_daemon(std::unique_ptr<Greeting> greeting, std::string socket);

    // Whether a second registration of `link`'s user may replace it: its
    // link ended, or it left handed connections unread over wedged_link.
    // Ends it then.
    bool replaceable(Link& link, pid_t newcomer);

    // ---- connections waiting for a registration ----------------------------

    void hold(uid_t uid, UniqueFd fd);

    void flush_pending(uid_t uid);

    void expire_pending(Clock::time_point now);

    void answer_unregistered(uid_t uid, UniqueFd fd);

    // Reads and drops what `fd` has now; false at its end, on an error or past
    // drain_bytes. `total` counts the bytes.
    bool discard(int fd, std::size_t& total) const;

    void wait_drain(Drain& drain, std::uint64_t id);

    // ---- the link socket: daemons registering, clients probing -------------

    void wait_link_listener();

    void pause_link_listener();

    void accept_links();

    void on_link_connection(UniqueFd fd);

    std::unique_ptr<Greeting> take_greeting(std::uint64_t id);

    void bad_greeting(std::unique_ptr<Greeting> greeting, std::string_view why);

    // Reads the request line of greeting `id` once `greeting` has new bytes;
    // a greeting whose connection failed is dropped.
    void wait_greeting(Greeting& greeting, std::uint64_t id);

    // Takes the request line when all of it is there, and not one byte more
    // (peeked first, then read to its newline).
    void read_greeting(std::uint64_t id);

    // ---- deadlines ---------------------------------------------------------

    void arm_sweep();

    void sweep();
};

}  // namespace hostkeeper::daemon::portd
