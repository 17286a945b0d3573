#include "daemon/portd/budget.hpp"

#include <utility>

namespace hostkeeper::daemon::portd {

Budget::Slot::Slot(Slot&& other) noexcept
    : budget_(std::exchange(other.budget_, nullptr)), holder_(other.holder_) {}

Budget::Slot& Budget::Slot::operator=(Slot&& other) noexcept {
    if (this != &other) {
        give_back();
        budget_ = std::exchange(other.budget_, nullptr);
        holder_ = other.holder_;
    }
    return *this;
}

Budget::Slot::~Slot() {
    give_back();
}

void Budget::Slot::give_back() {
    if (budget_ == nullptr) return;
    Budget& budget = *std::exchange(budget_, nullptr);
    const auto found = budget.held_.find(holder_.key());
    if (found == budget.held_.end()) return;
    --budget.used_;
    if (--found->second == 0) budget.held_.erase(found);
}

Budget::Budget(BudgetLimits limits) : limits_(limits) {
    if (limits_.reserved >= limits_.total)
        limits_.reserved = limits_.total == 0 ? 0 : limits_.total - 1;
}

Budget::Slot Budget::take(BudgetHolder holder) {
    const std::size_t mine = used_by(holder);
    if (mine >= limits_.per_holder || used_ >= limits_.total) return {};
    // Beyond a holder's first slot, only the unreserved part of the table.
    if (mine > 0 && used_ >= limits_.total - limits_.reserved) return {};
    ++held_[holder.key()];
    ++used_;
    return Slot(this, holder);
}

std::size_t Budget::used_by(BudgetHolder holder) const {
    const auto found = held_.find(holder.key());
    return found == held_.end() ? 0 : found->second;
}

}  // namespace hostkeeper::daemon::portd
