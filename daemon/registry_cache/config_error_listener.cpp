#include "daemon/registry_cache/config_error_listener.hpp"

#include <boost/asio/co_spawn.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/redirect_error.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>
#include <utility>

#include "daemon/registry_cache/error_answers.hpp"

namespace hostkeeper::daemon::registry_cache {
namespace asio = boost::asio;
namespace beast = boost::beast;
namespace http = boost::beast::http;
using boost::system::error_code;

namespace {
constexpr std::uint32_t kMaxHeaderBytes = 16 * 1024;
}  // namespace

ConfigErrorListener::ConfigErrorListener(asio::io_context& io, std::string reason,
                                         std::function<void()> activity)
    : io_(io),
      reason_("hostkeeperd cannot run with its configuration: " + std::move(reason)),
      activity_(std::move(activity)) {}

void ConfigErrorListener::adopt(asio::ip::tcp::socket socket) {
    if (*open_ >= kMaxConnections) {
        error_code ignored;
        // Reset, not closed: no TIME_WAIT is left behind.
        socket.set_option(asio::socket_base::linger(true, 0), ignored);
        socket.close(ignored);
        return;
    }
    asio::co_spawn(io_, answer(std::move(socket)), asio::detached);
}

asio::awaitable<void> ConfigErrorListener::answer(asio::ip::tcp::socket socket) {
    const std::shared_ptr<std::size_t> open = open_;
    ++*open;
    struct Count {
        std::shared_ptr<std::size_t> open;
        ~Count() { --*open; }
    } count{open};
    beast::tcp_stream stream(std::move(socket));
    beast::flat_buffer buffer;
    // The request is read before the answer is written, so that closing
    // does not reset a connection whose request is still unread.
    http::request_parser<http::empty_body> parser;
    parser.header_limit(kMaxHeaderBytes);
    parser.body_limit(0);
    error_code ec;
    stream.expires_after(kReadTimeout);
    co_await http::async_read(stream, buffer, parser,
                              asio::redirect_error(asio::use_awaitable, ec));
    if (ec == beast::error::timeout || ec == http::error::end_of_stream || ec == asio::error::eof)
        co_return;
    if (activity_) activity_();
    const ListenerResponse refusal = error_response(503, reason_);
    http::response<http::string_body> response{http::status::service_unavailable, 11};
    response.reason(refusal.reason);
    response.set(http::field::content_type, "application/json");
    response.keep_alive(false);
    response.body() = refusal.body;
    response.prepare_payload();
    stream.expires_after(kReadTimeout);
    co_await http::async_write(stream, response, asio::redirect_error(asio::use_awaitable, ec));
    error_code ignored;
    stream.socket().shutdown(asio::ip::tcp::socket::shutdown_send, ignored);
}

}  // namespace hostkeeper::daemon::registry_cache
