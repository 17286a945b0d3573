#pragma once
// hostkeeper-portd's budgets: one per bounded table (PortLimits), and whom
// each uid's slots count against (the login user of owner_files.hpp).

#include <sys/types.h>

#include "daemon/portd/budget.hpp"
#include "daemon/portd/owner_files.hpp"
#include "daemon/portd/port_service.hpp"

namespace hostkeeper::daemon::portd {

class PortBudgets {
  public:
    explicit PortBudgets(const PortLimits& limits, OwnerFiles::Paths files = {})
        : greetings({limits.greetings_per_user, limits.greetings_total, limits.greetings_reserved}),
          waiting({limits.pending_per_user, limits.pending_total, limits.pending_reserved}),
          queued({limits.queued_per_user, limits.queued_total, limits.queued_reserved}),
          registrations(
              {limits.registrations_per_user, limits.registrations, limits.registrations_reserved}),
          owners_(std::move(files)) {}

    // The login user (or the unowned subordinate uids) whose budgets `uid`'s
    // slots count against.
    BudgetHolder holder_of(uid_t uid) { return owners_.holder_of(uid); }

    Budget greetings;      // link connections before their request line
    Budget waiting;        // TCP connections waiting for a registration
    Budget queued;         // TCP connections queued on a full link
    Budget registrations;  // registered daemons

  private:
    OwnerFiles owners_;
};

}  // namespace hostkeeper::daemon::portd
