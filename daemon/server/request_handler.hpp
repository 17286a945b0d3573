#pragma once
// What the server asks of whatever answers requests: one payload in, one
// reply out. The dispatcher is the daemon's; a daemon that cannot run
// with its configuration answers with the reason instead.

#include <sys/types.h>

#include <boost/asio/awaitable.hpp>
#include <cstddef>
#include <memory>
#include <string>
#include <string_view>
#include <utility>

#include "proto/sealed_file.hpp"

namespace hostkeeper::daemon::server {

// What the server says about itself with each request.
struct ServerState {
    std::size_t connections = 0;  // being served, this one included
    pid_t peer_pid = 0;           // the client process (SO_PEERCRED); 0 when unknown
};

// A response payload (JSON text), and whether the daemon stops once it is
// written: the server then stops accepting and drains (PROTOCOL.md, stop).
//
// A cached answer's bulk may come prepared instead: the payload is then
// `payload` + `*shared` + `tail`, written as they are in one scatter/gather
// write. `shared` is immutable and shared by every reply made from the same
// cached document; it must hold no secret, for it is neither copied nor
// scrubbed (`payload` and `tail` are, as every payload is).
//
// Or a cached document goes by reference: `file` is passed with the frame's
// first byte (SCM_RIGHTS), and the payload names it (PROTOCOL.md, Passed
// documents). It holds no secret either.
struct Reply {
    std::string payload;
    bool stop = false;
    std::shared_ptr<const std::string> shared = nullptr;
    std::string tail{};
    std::shared_ptr<const proto::SealedFile> file = nullptr;

    // The payload's size: the three parts together.
    std::size_t size() const {
        return payload.size() + (shared ? shared->size() : 0) + tail.size();
    }
};

class RequestHandler {
  public:
    RequestHandler() = default;
    RequestHandler(const RequestHandler&) = delete;
    RequestHandler& operator=(const RequestHandler&) = delete;
    virtual ~RequestHandler() = default;

    // Never throws for bad input. The payload may hold a token: the caller
    // scrubs it once written.
    virtual boost::asio::awaitable<Reply> handle(std::string_view payload, ServerState server) = 0;
};

}  // namespace hostkeeper::daemon::server
