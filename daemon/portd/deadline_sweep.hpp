#pragma once
// The deadlines of hostkeeper-portd's tables, checked by one timer every
// 100 ms while any table has one: each table expires its own entries.

#include <boost/asio/io_context.hpp>
#include <boost/asio/steady_timer.hpp>
#include <functional>
#include <utility>
#include <vector>

#include "daemon/portd/handler_basics.hpp"

namespace hostkeeper::daemon::portd {

class DeadlineSweep {
  public:
    // Expires what is due at `now`; true while entries with a deadline are
    // left.
    using Expire = std::function<bool(Clock::time_point now)>;

    explicit DeadlineSweep(boost::asio::io_context& io) : timer_(io) {}

    // A table, expired after those added before it.
    void add(Expire expire) { tables_.push_back(std::move(expire)); }

    // Sweeps soon: a table just got an entry with a deadline.
    void arm();

  private:
    void sweep();

    boost::asio::steady_timer timer_;
    bool armed_ = false;
    std::vector<Expire> tables_;
};

}  // namespace hostkeeper::daemon::portd
