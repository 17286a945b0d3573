#pragma once
// A response body that is still being written into a file by someone else
// (an archive downloading from upstream): the listener sends each reader
// what may be sent as it comes, and ends the response only when the writer
// says the body is whole. Event-loop only: the writer and every reader run
// on one executor, so reading extent() and then awaiting changed() misses
// no change.

#include <boost/asio/awaitable.hpp>
#include <cstdint>
#include <optional>

namespace hostkeeper::daemon::http {

class GrowingBody {
  public:
    struct Extent {
        std::uint64_t sendable = 0;  // bytes from offset 0 that may be sent now
        bool whole = false;          // sendable is the whole body: end the response
        bool failed = false;         // the body will never be whole: abort the response
    };

    GrowingBody() = default;
    GrowingBody(const GrowingBody&) = delete;
    GrowingBody& operator=(const GrowingBody&) = delete;
    virtual ~GrowingBody() = default;

    // The body's length when it was announced before its end (sent with
    // Content-Length); nullopt: the response is chunked.
    virtual std::optional<std::uint64_t> announced() const = 0;
    virtual Extent extent() const = 0;
    // Returns after the next change of extent() (never at once).
    virtual boost::asio::awaitable<void> changed() = 0;
};

}  // namespace hostkeeper::daemon::http
