#pragma once
// A point in time every blocking step of a client call must finish by.

#include <algorithm>
#include <chrono>

namespace hostkeeper::helper::client {

class Deadline {
  public:
    using Clock = std::chrono::steady_clock;
    explicit Deadline(std::chrono::milliseconds budget)
        : at_(Clock::now() + budget), budget_(budget) {}

    bool expired() const { return Clock::now() >= at_; }
    // Milliseconds left, for poll(2); 0 once expired.
    int remaining_ms() const {
        const auto left =
            std::chrono::duration_cast<std::chrono::milliseconds>(at_ - Clock::now()).count();
        return static_cast<int>(std::clamp<long long>(left, 0, 24LL * 3600 * 1000));
    }
    std::chrono::milliseconds budget() const { return budget_; }

  private:
    Clock::time_point at_;
    std::chrono::milliseconds budget_;
};

}  // namespace hostkeeper::helper::client
