#pragma once
// Writing a reply frame with a descriptor passed along with its first byte
// (SCM_RIGHTS): how a document goes by reference (PROTOCOL.md, Passed
// documents). Asio's sockets carry no ancillary data, so the first write is
// the kernel's sendmsg, and what it leaves unwritten goes by async_write.

#include <array>
#include <boost/asio/awaitable.hpp>
#include <boost/asio/buffer.hpp>
#include <boost/asio/local/stream_protocol.hpp>
#include <boost/system/error_code.hpp>

namespace hostkeeper::daemon::server {

// Writes all of `frame` to `socket`, passing `fd` with its first byte; `ec`
// is set when the connection fails. The caller's deadline bounds it, as any
// write: closing the socket ends the wait.
boost::asio::awaitable<void> write_passing(boost::asio::local::stream_protocol::socket& socket,
                                           std::array<boost::asio::const_buffer, 4> frame, int fd,
                                           boost::system::error_code& ec);

}  // namespace hostkeeper::daemon::server
