#include "daemon/portd/deadline_sweep.hpp"

#include <chrono>

namespace hostkeeper::daemon::portd {

namespace {

// Deadlines are checked this often while anything has one.
constexpr std::chrono::milliseconds kSweepInterval{100};

}  // namespace

void DeadlineSweep::arm() {
    if (armed_) return;
    armed_ = true;
    timer_.expires_after(kSweepInterval);
    timer_.async_wait([this](const boost::system::error_code& ec) {
        armed_ = false;
        if (ec) return;
        sweep();
    });
}

void DeadlineSweep::sweep() {
    const Clock::time_point now = Clock::now();
    bool left = false;
    for (const Expire& expire : tables_) left = expire(now) || left;
    if (left) arm();
}

}  // namespace hostkeeper::daemon::portd
