#pragma once
// The loopback port `hostkeeper login` listens on for the browser's
// redirect: 127.0.0.1 only, the first free port of a range, one request head
// read per connection with a deadline, one small HTML page answered.

#include <chrono>
#include <optional>
#include <string>

#include "proto/unique_fd.hpp"

namespace hostkeeper::helper::cli {

class LoopbackListener {
  public:
    // Binds 127.0.0.1 on the first free port in [first, last]. Throws
    // std::runtime_error when none is free.
    LoopbackListener(int first, int last);
    int port() const { return port_; }

    // The next connection's request head (at most kMaxRedirectHead bytes,
    // up to the blank line), its connection kept for answer(); nullopt when
    // `deadline` passes first.
    std::optional<std::string> next_request(std::chrono::steady_clock::time_point deadline);
    // Answers the request last read and closes its connection.
    void answer(int status, const std::string& title, const std::string& text);

  private:
    proto::UniqueFd listener_{-1};
    proto::UniqueFd connection_{-1};
    int port_ = 0;
};

}  // namespace hostkeeper::helper::cli
