#pragma once
// The loopback port `hostkeeper login` listens on for the browser's
// redirect: 127.0.0.1 only, the first free port of a range, one request head
// read per connection, one small HTML page answered. Connections are read
// side by side, each within its own time and size limits, so one that sends
// nothing, trickles or sends too much holds up no other. Only the user's own
// connections (and root's) are read: the kernel names each one's owner
// (proto/sock_diag), and another user's is answered 403 unread and closed,
// so no other local user can hand the login a code or end it.

#include <chrono>
#include <optional>
#include <string>
#include <vector>

#include "proto/unique_fd.hpp"

namespace hostkeeper::helper::cli {

class LoopbackListener {
  public:
    // Binds 127.0.0.1 on the first free port in [first, last]. Throws
    // std::runtime_error when none is free, or when the kernel cannot be
    // asked who connects (NETLINK_SOCK_DIAG).
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
    // Whether the client of accepted `fd` runs as this user or root; false
    // when the kernel names another owner or none.
    bool from_this_user(int fd);
    // Answers `fd` 403 unread and tells the terminal, the first time.
    void refuse_stranger(int fd);

    proto::UniqueFd listener_{-1};
    proto::UniqueFd netlink_{-1};
    bool told_stranger_ = false;
    std::vector<Pending> pending_;
    proto::UniqueFd connection_{-1};
    int port_ = 0;
};

}  // namespace hostkeeper::helper::cli
