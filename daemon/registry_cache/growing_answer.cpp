#include "daemon/registry_cache/growing_answer.hpp"

#include <unistd.h>

#include <algorithm>
#include <array>
#include <boost/asio/redirect_error.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <boost/asio/write.hpp>
#include <boost/beast/http.hpp>
#include <cerrno>
#include <cstdint>
#include <optional>
#include <utility>

namespace hostkeeper::daemon::registry_cache {
namespace asio = boost::asio;
namespace beast = boost::beast;
namespace bhttp = boost::beast::http;
using boost::system::error_code;

namespace {

constexpr std::size_t kPiece = std::size_t{64} * 1024;

using Piece = std::array<char, kPiece>;

// The head: Content-Length when the body's length is known, else chunked.
asio::awaitable<error_code> write_head(beast::tcp_stream& stream, const ListenerResponse& answer,
                                       bool keep_alive, std::optional<std::uint64_t> length) {
    bhttp::response<bhttp::empty_body> response;
    response.result(answer.status);
    response.version(11);
    if (!answer.reason.empty()) response.reason(answer.reason);
    response.set(bhttp::field::content_type, answer.content_type);
    for (const auto& [name, value] : answer.headers) response.set(name, value);
    response.keep_alive(keep_alive);
    if (length)
        response.content_length(*length);
    else
        response.chunked(true);
    bhttp::response_serializer<bhttp::empty_body> serializer(response);
    error_code ec;
    co_await bhttp::async_write_header(stream, serializer,
                                       asio::redirect_error(asio::use_awaitable, ec));
    co_return ec;
}

// Bytes [sent, sent + n) of the file, sent raw or as one chunk.
asio::awaitable<error_code> write_piece(beast::tcp_stream& stream, int fd, Piece& piece,
                                        std::uint64_t sent, std::uint64_t n, bool chunked) {
    const ssize_t got = ::pread(fd, piece.data(), std::min<std::uint64_t>(n, piece.size()),
                                static_cast<off_t>(sent));
    if (got <= 0) co_return error_code(got < 0 ? errno : EIO, boost::system::system_category());
    const auto bytes = asio::buffer(piece.data(), static_cast<std::size_t>(got));
    error_code ec;
    if (chunked) {
        co_await asio::async_write(stream, bhttp::make_chunk(bytes),
                                   asio::redirect_error(asio::use_awaitable, ec));
    } else {
        co_await asio::async_write(stream, bytes, asio::redirect_error(asio::use_awaitable, ec));
    }
    if (!ec && static_cast<std::uint64_t>(got) != std::min<std::uint64_t>(n, piece.size()))
        ec = asio::error::connection_aborted;  // the file is shorter than said: never guess
    co_return ec;
}

}  // namespace

asio::awaitable<error_code> write_growing_answer(beast::tcp_stream& stream,
                                                 ListenerResponse& answer, bool keep_alive,
                                                 bool head, std::chrono::seconds write_timeout) {
    const std::shared_ptr<daemon::http::GrowingBody> body = answer.growing;
    const std::optional<std::uint64_t> length = body->announced();
    stream.expires_after(write_timeout);
    auto heading = write_head(stream, answer, keep_alive, length);  // named first
    error_code ec = co_await std::move(heading);
    if (ec || head) co_return ec;
    const int fd = answer.file->get();
    auto piece = std::make_unique<Piece>();
    std::uint64_t sent = 0;
    for (;;) {
        const daemon::http::GrowingBody::Extent extent = body->extent();
        if (extent.failed) co_return asio::error::connection_aborted;
        const std::uint64_t limit = length ? std::min(extent.sendable, *length) : extent.sendable;
        if (sent < limit) {
            stream.expires_after(write_timeout);
            auto writing = write_piece(stream, fd, *piece, sent, limit - sent, !length);
            if ((ec = co_await std::move(writing))) co_return ec;
            sent += std::min<std::uint64_t>(limit - sent, piece->size());
            continue;
        }
        if (extent.whole) {
            // Never more or fewer bytes than the head announced.
            if (length && extent.sendable != *length) co_return asio::error::connection_aborted;
            if (!length) {
                stream.expires_after(write_timeout);
                co_await asio::async_write(stream, bhttp::make_chunk_last(),
                                           asio::redirect_error(asio::use_awaitable, ec));
            }
            co_return ec;
        }
        auto waiting = body->changed();  // named first
        co_await std::move(waiting);
    }
}

}  // namespace hostkeeper::daemon::registry_cache
