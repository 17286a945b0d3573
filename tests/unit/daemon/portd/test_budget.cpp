#include <catch2/catch.hpp>
#include <vector>

#include "daemon/portd/budget.hpp"

namespace test_budget {

using namespace hostkeeper::daemon::portd;

TEST_CASE("a budget holder takes at most per_holder slots and gives them back") {
    Budget budget({3, 100, 10});
    const BudgetHolder alice = BudgetHolder::user(1000);
    std::vector<Budget::Slot> slots;
    for (int i = 0; i < 3; ++i) {
        slots.push_back(budget.take(alice));
        CHECK(slots.back().held());
    }
    CHECK_FALSE(budget.take(alice));
    CHECK(budget.used_by(alice) == 3);
    slots.pop_back();
    CHECK(budget.used_by(alice) == 2);
    CHECK(budget.take(alice));  // a temporary: given back at once
    CHECK(budget.used() == 2);
    slots.clear();
    CHECK(budget.used() == 0);
    CHECK(budget.used_by(alice) == 0);
}

TEST_CASE("a slot moved keeps its one count; reassigned, it gives the old one back") {
    Budget budget({2, 10, 1});
    const BudgetHolder alice = BudgetHolder::user(1000);
    Budget::Slot first = budget.take(alice);
    Budget::Slot moved = std::move(first);
    // NOLINTNEXTLINE(bugprone-use-after-move,clang-analyzer-cplusplus.Move): checking the move
    CHECK_FALSE(first.held());
    CHECK(moved.held());
    CHECK(budget.used() == 1);
    moved = budget.take(alice);
    CHECK(budget.used() == 1);
    moved = Budget::Slot();
    CHECK(budget.used() == 0);
}

TEST_CASE("many holders fill only total minus reserved beyond their first slots") {
    // 40 holders with 8 each would take 320 of 256 slots: they get 192 (the
    // unreserved part) plus at most one first slot each.
    Budget budget({8, 256, 64});
    std::vector<Budget::Slot> slots;
    for (uid_t uid = 100000; uid < 100040; ++uid)
        for (int i = 0; i < 8; ++i)
            if (Budget::Slot slot = budget.take(BudgetHolder::user(uid)))
                slots.push_back(std::move(slot));
    CHECK(budget.used() <= 192 + 40);
    // A user with nothing in the table still gets one.
    const BudgetHolder victim = BudgetHolder::user(1000);
    Budget::Slot mine = budget.take(victim);
    CHECK(mine.held());
    // But not a second while the unreserved part is full.
    CHECK_FALSE(budget.take(victim));
}

TEST_CASE("the reserve fills only with first slots: the last one goes to a newcomer") {
    Budget budget({4, 10, 3});
    std::vector<Budget::Slot> slots;
    slots.reserve(10);
    // Two holders fill the unreserved seven.
    for (int i = 0; i < 4; ++i) slots.push_back(budget.take(BudgetHolder::user(1)));
    for (int i = 0; i < 3; ++i) slots.push_back(budget.take(BudgetHolder::user(2)));
    CHECK(budget.used() == 7);
    CHECK_FALSE(budget.take(BudgetHolder::user(2)));
    CHECK(budget.take(BudgetHolder::unowned()).held());  // a newcomer: yes (given back)
    for (uid_t uid = 10; uid < 13; ++uid) slots.push_back(budget.take(BudgetHolder::user(uid)));
    CHECK(budget.used() == 10);
    CHECK_FALSE(budget.take(BudgetHolder::user(20)));  // the table is full
}

}  // namespace test_budget
