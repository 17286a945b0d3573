#include "daemon/portd/waiting_connections.hpp"

#include <utility>

namespace hostkeeper::daemon::portd {

void WaitingRoom::hold(uid_t uid, proto::UniqueFd fd) {
    Budget::Slot slot = budget_.take(holder_of_(uid));
    if (!slot) {
        refuse_full(counters_, uid, std::move(fd),
                    "too many connections of its user wait for a daemon");
        return;
    }
    pending_.push_back(
        Pending{uid, std::move(fd), Clock::now() + limits_.pending_wait, std::move(slot)});
    sweep_.arm();
}

void WaitingRoom::release(uid_t uid) {
    // At most pending_total entries: a registration's scan is bounded.
    std::deque<Pending> theirs;
    std::deque<Pending> others;
    for (Pending& p : pending_) (p.uid == uid ? theirs : others).push_back(std::move(p));
    pending_ = std::move(others);
    for (Pending& p : theirs) {
        p.slot = Budget::Slot();
        deliver_(uid, std::move(p.fd));
    }
}

bool WaitingRoom::expire(Clock::time_point now) {
    while (!pending_.empty() && pending_.front().deadline <= now) {
        Pending p = std::move(pending_.front());
        pending_.pop_front();
        p.slot = Budget::Slot();
        answers_.answer(p.uid, std::move(p.fd));
    }
    return !pending_.empty();
}

}  // namespace hostkeeper::daemon::portd
