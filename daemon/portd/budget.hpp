#pragma once
// One of hostkeeper-portd's bounded tables (greetings in flight, connections
// waiting for a daemon, connections queued on a link, registrations),
// counted per budget holder (a login user, or the unowned subordinate uids
// together: uid_owners.hpp). A holder takes at most `per_holder` slots. The
// last `reserved` slots of the table go only to holders that hold none yet:
// whatever many uids one user runs, the holders together fill at most
// `total - reserved` slots beyond their first, so a user with nothing in the
// table gets a slot while fewer than `reserved` other holders are taking
// their first. Pure counting, no I/O.

#include <cstddef>
#include <cstdint>
#include <unordered_map>

#include "daemon/portd/uid_owners.hpp"

namespace hostkeeper::daemon::portd {

struct BudgetLimits {
    std::size_t per_holder = 0;
    std::size_t total = 0;
    std::size_t reserved = 0;  // below `total`
};

class Budget {
  public:
    // One slot taken; given back when destroyed (a default-made or moved-from
    // slot holds none). The budget must outlive it.
    class Slot {
      public:
        Slot() = default;
        Slot(Slot&& other) noexcept;
        Slot& operator=(Slot&& other) noexcept;
        Slot(const Slot&) = delete;
        Slot& operator=(const Slot&) = delete;
        ~Slot();

        bool held() const { return budget_ != nullptr; }
        explicit operator bool() const { return held(); }

      private:
        friend class Budget;
        Slot(Budget* budget, BudgetHolder holder) : budget_(budget), holder_(holder) {}
        void give_back();

        Budget* budget_ = nullptr;
        BudgetHolder holder_ = BudgetHolder::unowned();
    };

    explicit Budget(BudgetLimits limits);
    Budget(const Budget&) = delete;
    Budget& operator=(const Budget&) = delete;

    // A slot for `holder`, or an empty one when the rules above refuse it.
    Slot take(BudgetHolder holder);

    std::size_t used() const { return used_; }
    std::size_t used_by(BudgetHolder holder) const;
    const BudgetLimits& limits() const { return limits_; }

  private:
    BudgetLimits limits_;
    std::size_t used_ = 0;
    std::unordered_map<std::uint64_t, std::size_t> held_;  // by BudgetHolder::key()
};

}  // namespace hostkeeper::daemon::portd
