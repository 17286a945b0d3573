#pragma once
// The loopback port `hostkeeper login` listens on for the browser's
// redirect: 127.0.0.1 only, the first free port of a range, one request head
// read per connection, one small HTML page answered. Connections are read
// side by side, each within its own time and size limits, so one that sends
// nothing, trickles or sends too much holds up no other.

#include <chrono>
#include <optional>
#include <string>
#include <vector>

#include "proto/unique_fd.hpp"

namespace hostkeeper::helper::cli {

class LoopbackListener {
  public:
    // Binds 127.0.0.1 on the first free port in [first, last]. Throws
    // std::runtime_error when none is free.
    LoopbackListener(int first, int last);
    int port() const { return port_; }

    // The next request head, its connection kept for answer(): what a
    // connection sent up to the blank line, at most kMaxRedirectHead bytes,
    // or before it stopped sending or its 10 seconds ran out (a connection
    // that sent nothing is closed unanswered). nullopt when `deadline`
    // passes first.
    std::optional<std::string> next_request(std::chrono::steady_clock::time_point deadline);
    // Answers the request last read and closes its connection.
    void answer(int status, const std::string& title, const std::string& text);

  private:
    struct Pending {
        proto::UniqueFd fd;
        std::chrono::steady_clock::time_point until;
        std::string head;
        bool ended = false;  // the head is complete, or the peer stopped
    };
    std::optional<std::string> take_finished();
    void accept_one();

    proto::UniqueFd listener_{-1};
    std::vector<Pending> pending_;
    proto::UniqueFd connection_{-1};
    int port_ = 0;
};

}  // namespace hostkeeper::helper::cli
