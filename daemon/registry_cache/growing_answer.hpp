#pragma once
// An answer whose file is still being written (ListenerResponse::growing: an
// archive downloading), sent as it grows: with Content-Length when its
// length was announced, else chunked. Bytes go out as the writer allows
// them; when the body fails, the response is cut short (no last chunk, or
// fewer bytes than announced) and the caller closes the connection, so the
// client never takes a partial or wrong body for a whole one.

#include <boost/asio/awaitable.hpp>
#include <boost/beast/core/tcp_stream.hpp>
#include <boost/system/error_code.hpp>
#include <chrono>

#include "daemon/registry_cache/http_handler.hpp"

namespace hostkeeper::daemon::registry_cache {

// Each write gets `write_timeout`; waiting for the writer has none of its
// own (the download has its deadline). An error: the connection must close.
boost::asio::awaitable<boost::system::error_code> write_growing_answer(
    boost::beast::tcp_stream& stream, ListenerResponse& answer, bool keep_alive, bool head,
    std::chrono::seconds write_timeout);

}  // namespace hostkeeper::daemon::registry_cache
