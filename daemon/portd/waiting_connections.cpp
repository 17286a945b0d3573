// Connections waiting for their user's daemon to register: held, handed
// once it does, or answered 503 when it does not in time (and read until
// their client closes).

#include <spdlog/spdlog.h>
#include <sys/socket.h>

#include <cerrno>

#include "daemon/portd/port_state.hpp"
#include "daemon/portd/socket_calls.hpp"

namespace hostkeeper::daemon::portd {

std::string unregistered_response(uid_t uid, std::chrono::milliseconds waited) {
    const std::string body =
        R"({"errors":["hostkeeperd is not running for uid )" + std::to_string(uid) +
        ": its registry cache did not register with hostkeeper-portd within " +
        std::to_string(waited.count()) +
        R"( ms (is hostkeeperd.socket enabled for this user?); run hostkeeper doctor"]})";
    return "HTTP/1.1 503 hostkeeperd is not running for this user (run: hostkeeper doctor)\r\n"
           "Content-Type: application/json\r\n"
           "Content-Length: " +
           std::to_string(body.size()) +
           "\r\n"
           "Cache-Control: no-store\r\n"
           "Connection: close\r\n"
           "\r\n" +
           body;
}

void PortService::Impl::hold(uid_t uid, UniqueFd fd) {
    Budget::Slot slot = budgets.waiting.take(budgets.holder_of(uid));
    if (!slot) {
        refuse_full(uid, std::move(fd), "too many connections of its user wait for a daemon");
        return;
    }
    pending.push_back(
        Pending{uid, std::move(fd), Clock::now() + limits.pending_wait, std::move(slot)});
    arm_sweep();
}

void PortService::Impl::flush_pending(uid_t uid) {
    // At most pending_total entries: a registration's scan is bounded.
    std::deque<Pending> theirs;
    std::deque<Pending> others;
    for (Pending& p : pending) (p.uid == uid ? theirs : others).push_back(std::move(p));
    pending = std::move(others);
    for (Pending& p : theirs) {
        p.slot = Budget::Slot();
        deliver(uid, std::move(p.fd));
    }
}

void PortService::Impl::expire_pending(Clock::time_point now) {
    while (!pending.empty() && pending.front().deadline <= now) {
        Pending p = std::move(pending.front());
        pending.pop_front();
        p.slot = Budget::Slot();
        answer_unregistered(p.uid, std::move(p.fd));
    }
}

void PortService::Impl::answer_unregistered(uid_t uid, UniqueFd fd) {
    ++counters.unregistered;
    if (worth_logging(counters.unregistered))
        spdlog::info("answered 503 to uid {}: no daemon registered ({} such answers so far)", uid,
                     counters.unregistered);
    if (drains.size() >= limits.draining) {
        reset_and_close(fd.release());
        return;
    }
    // What the client sent first (its request), then the answer; a client
    // still sending when the bound is reached is reset.
    std::size_t discarded = 0;
    if (!discard(fd.get(), discarded) ||
        !send_now(fd.get(), unregistered_response(uid, limits.pending_wait))) {
        reset_and_close(fd.release());
        return;
    }
    ::shutdown(fd.get(), SHUT_WR);
    const std::uint64_t id = ++next_id;
    auto drain = std::make_unique<Drain>(io, fd.release(), Clock::now() + limits.drain_deadline);
    drain->bytes = discarded;
    Drain& mine = *drain;
    drains.emplace(id, std::move(drain));
    arm_sweep();
    wait_drain(mine, id);
}

bool PortService::Impl::discard(int fd, std::size_t& total) const {
    char buffer[4096];
    for (;;) {
        const ssize_t n = ::recv(fd, buffer, sizeof buffer, MSG_DONTWAIT);
        if (n > 0) {
            total += static_cast<std::size_t>(n);
            if (total > limits.drain_bytes) return false;
            continue;
        }
        if (n < 0 && errno == EINTR) continue;
        return n < 0 && would_block(errno);
    }
}

void PortService::Impl::wait_drain(Drain& drain, std::uint64_t id) {
    drain.descriptor.async_wait(
        Descriptor::wait_read, [this, id](const boost::system::error_code& ec) {
            const auto found = drains.find(id);
            if (found == drains.end()) return;
            Drain& current = *found->second;
            if (!ec && discard(current.descriptor.native_handle(), current.bytes)) {
                wait_drain(current, id);
                return;
            }
            drains.erase(found);
        });
}

}  // namespace hostkeeper::daemon::portd
