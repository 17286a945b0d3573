#pragma once
// An archive downloading into the store's temp file, as the listener's
// readers follow it: how many bytes the file holds, the length upstream
// announced, and the verdict. Every byte but the last may go out while it
// downloads; the last goes only once the archive is verified (whole), so a
// reader never gets a complete wrong file: on a failure before that its
// response is cut short instead. Storing it may still fail after; it stays
// whole. Readers wait on changed(), woken by each
// piece written (the download's body observer) and by the verdict, on the
// event loop: no polling.

#include <boost/asio/any_io_executor.hpp>
#include <boost/asio/awaitable.hpp>
#include <boost/asio/steady_timer.hpp>
#include <cstdint>
#include <exception>
#include <optional>

#include "daemon/http/growing_body.hpp"

namespace hostkeeper::daemon::archives {

class GrowingArchive final : public http::GrowingBody {
  public:
    explicit GrowingArchive(const boost::asio::any_io_executor& io);

    // The file holds `bytes` more of the body; `announced` as upstream said it.
    void grew(std::uint64_t bytes, std::optional<std::uint64_t> announced);
    // Verified (when there was anything to verify): all of its `size` bytes
    // may go.
    void finish(std::uint64_t size);
    // It failed or did not verify: readers abort; get() rethrows `error`.
    // Nothing once it is whole.
    void fail(std::exception_ptr error);

    // Bytes came, or it ended: a reader may start.
    bool started() const noexcept { return written_ > 0 || whole_ || error_; }
    bool whole() const noexcept { return whole_; }
    std::uint64_t written() const noexcept { return written_; }
    const std::exception_ptr& error() const noexcept { return error_; }

    std::optional<std::uint64_t> announced() const override { return announced_; }
    Extent extent() const override;
    boost::asio::awaitable<void> changed() override;

  private:
    boost::asio::steady_timer signal_;  // never expires; cancelled at each change
    std::uint64_t written_ = 0;
    std::optional<std::uint64_t> announced_;
    bool whole_ = false;
    std::exception_ptr error_;
};

}  // namespace hostkeeper::daemon::archives
