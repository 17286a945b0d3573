#include "daemon/archives/growing_archive.hpp"

#include <boost/asio/redirect_error.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <utility>

namespace hostkeeper::daemon::archives {
namespace asio = boost::asio;

GrowingArchive::GrowingArchive(const asio::any_io_executor& io)
    : signal_(io, std::chrono::steady_clock::time_point::max()) {}

void GrowingArchive::grew(std::uint64_t bytes, std::optional<std::uint64_t> announced) {
    if (written_ == 0) announced_ = announced;  // fixed before any reader starts
    written_ += bytes;
    signal_.cancel();
}

void GrowingArchive::finish(std::uint64_t size) {
    // Nobody started before it was whole: its length is known to all.
    if (written_ == 0) announced_ = size;
    written_ = size;
    whole_ = true;
    signal_.cancel();
}

void GrowingArchive::fail(std::exception_ptr error) {
    if (whole_) return;  // verified and whole: what follows cannot unmake that
    error_ = std::move(error);
    signal_.cancel();
}

http::GrowingBody::Extent GrowingArchive::extent() const {
    Extent out;
    if (error_) {
        out.failed = true;
        return out;
    }
    if (whole_) {
        out.sendable = written_;
        out.whole = true;
        return out;
    }
    // The last byte waits for the verdict.
    out.sendable = written_ > 0 ? written_ - 1 : 0;
    return out;
}

asio::awaitable<void> GrowingArchive::changed() {
    boost::system::error_code ignored;  // cancelled: the change
    co_await signal_.async_wait(asio::redirect_error(asio::use_awaitable, ignored));
}

}  // namespace hostkeeper::daemon::archives
