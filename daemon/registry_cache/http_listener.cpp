#include "daemon/registry_cache/http_listener.hpp"

#include <spdlog/spdlog.h>

#include <boost/asio/co_spawn.hpp>
#include <boost/asio/redirect_error.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>
#include <cctype>
#include <cstdint>
#include <exception>
#include <string_view>
#include <utility>

#include "daemon/registry_cache/growing_answer.hpp"

namespace hostkeeper::daemon::registry_cache {
namespace asio = boost::asio;
namespace beast = boost::beast;
namespace bhttp = boost::beast::http;
using boost::system::error_code;

namespace {
constexpr std::uint32_t kMaxHeaderBytes = 16 * 1024;

// A connection in the listener's set (which stop() closes) while it is served.
template <class Item>
class Tracked {
  public:
    Tracked(std::shared_ptr<std::set<Item*>> set, Item* item) : set_(std::move(set)), item_(item) {
        set_->insert(item_);
    }
    Tracked(const Tracked&) = delete;
    Tracked& operator=(const Tracked&) = delete;
    ~Tracked() { set_->erase(item_); }

  private:
    std::shared_ptr<std::set<Item*>> set_;
    Item* item_;
};

using Head = bhttp::request<bhttp::empty_body>;

// The first header in `request` that only a web browser sends, by name:
// Origin, or any Sec-Fetch-* (Fetch Metadata). Go's net/http, Terraform's
// client, sends neither.
std::string browser_header(const Head& request) {
    constexpr std::string_view kSecFetch = "sec-fetch-";
    for (const auto& field : request) {
        const std::string_view name(field.name_string().data(), field.name_string().size());
        if (field.name() == bhttp::field::origin) return std::string(name);
        if (name.size() < kSecFetch.size()) continue;
        bool sec_fetch = true;
        for (std::size_t i = 0; i < kSecFetch.size() && sec_fetch; ++i) {
            const auto c = static_cast<unsigned char>(name[i]);
            sec_fetch = std::tolower(c) == kSecFetch[i];
        }
        if (sec_fetch) return std::string(name);
    }
    return {};
}

ListenerRequest request_of(const Head& head, std::uint16_t local_port) {
    ListenerRequest asked;
    asked.local_port = local_port;
    asked.target = std::string(head.target());
    asked.host_header = std::string(head[bhttp::field::host]);
    if (const auto it = head.find(bhttp::field::authorization); it != head.end())
        asked.authorization.emplace(std::string_view(it->value().data(), it->value().size()));
    asked.browser_header = browser_header(head);
    return asked;
}

// The local port of `socket`: 0 when it cannot be read.
std::uint16_t port_of(const asio::ip::tcp::socket& socket) {
    error_code ec;
    const asio::ip::tcp::endpoint local = socket.local_endpoint(ec);
    return ec ? 0 : local.port();
}

// The request's header block held the token: scrub what the parser kept.
void scrub_authorization(Head& head) {
    if (const auto it = head.find(bhttp::field::authorization); it != head.end()) {
        // NOLINTNEXTLINE(cppcoreguidelines-pro-type-const-cast): the parser's own buffer
        proto::scrub(const_cast<char*>(it->value().data()), it->value().size());
    }
}

// A connection's coroutine ended: a failure it did not handle is logged.
auto log_failure(std::string name) {
    return [name = std::move(name)](const std::exception_ptr& failure) {
        if (!failure) return;
        try {
            std::rethrow_exception(failure);
        } catch (const std::exception& e) {
            spdlog::error("{}: a connection failed: {}", name, e.what());
        }
    };
}

template <typename Body>
asio::awaitable<error_code> write_response(beast::tcp_stream& stream,
                                           bhttp::response<Body>& response, bool head) {
    error_code ec;
    if (head) {
        bhttp::response_serializer<Body> serializer(response);
        co_await bhttp::async_write_header(stream, serializer,
                                           asio::redirect_error(asio::use_awaitable, ec));
    } else {
        co_await bhttp::async_write(stream, response,
                                    asio::redirect_error(asio::use_awaitable, ec));
    }
    co_return ec;
}

asio::awaitable<error_code> write_file_answer(beast::tcp_stream& stream, ListenerResponse& answer,
                                              bool keep_alive, bool head) {
    bhttp::response<bhttp::file_body> response;
    response.result(answer.status);
    response.version(11);
    beast::file_posix file;
    file.native_handle(answer.file->release());
    error_code ec;
    response.body().reset(std::move(file), ec);
    if (ec) co_return ec;
    response.set(bhttp::field::content_type, answer.content_type);
    for (const auto& [name, value] : answer.headers) response.set(name, value);
    response.keep_alive(keep_alive);
    response.prepare_payload();
    auto writing = write_response(stream, response, head);  // named first
    co_return co_await std::move(writing);
}

asio::awaitable<error_code> write_answer(beast::tcp_stream& stream, ListenerResponse& answer,
                                         bool keep_alive, bool head,
                                         std::chrono::seconds write_timeout) {
    if (answer.file && answer.growing) {
        auto writing = write_growing_answer(stream, answer, keep_alive, head, write_timeout);
        co_return co_await std::move(writing);  // named first
    }
    if (answer.file) {
        auto writing = write_file_answer(stream, answer, keep_alive, head);  // named first
        co_return co_await std::move(writing);
    }
    bhttp::response<bhttp::string_body> response;
    response.result(answer.status);
    response.version(11);
    if (!answer.reason.empty()) response.reason(answer.reason);
    if (!answer.content_type.empty()) response.set(bhttp::field::content_type, answer.content_type);
    for (const auto& [name, value] : answer.headers) response.set(name, value);
    response.keep_alive(keep_alive);
    if (answer.status != 204 && answer.status != 304) {
        response.body() = std::move(answer.body);
        response.prepare_payload();
    }
    auto writing = write_response(stream, response, head);  // named first
    co_return co_await std::move(writing);
}

// A malformed request: a plain 400 (the connection is closed after it).
asio::awaitable<void> write_bad_request(beast::tcp_stream& stream) {
    bhttp::response<bhttp::string_body> bad{bhttp::status::bad_request, 11};
    bad.set(bhttp::field::content_type, "text/plain");
    bad.body() = "bad request\n";
    bad.keep_alive(false);
    bad.prepare_payload();
    error_code ec;
    co_await bhttp::async_write(stream, bad, asio::redirect_error(asio::use_awaitable, ec));
}

bool quiet_end(const error_code& ec) {
    return ec == bhttp::error::end_of_stream || ec == asio::error::eof ||
           ec == beast::error::timeout;
}

}  // namespace

// The read buffer held request headers, a token among them: its memory is
// zeroed when it is given back.
template <typename T>
struct ScrubbingAllocator {
    using value_type = T;
    ScrubbingAllocator() = default;
    template <typename U>
    explicit ScrubbingAllocator(const ScrubbingAllocator<U>& /*other*/) noexcept {}
    T* allocate(std::size_t n) { return std::allocator<T>().allocate(n); }
    void deallocate(T* p, std::size_t n) noexcept {
        proto::scrub(p, n * sizeof(T));
        std::allocator<T>().deallocate(p, n);
    }
    template <typename U>
    bool operator==(const ScrubbingAllocator<U>& /*other*/) const noexcept {
        return true;
    }
    template <typename U>
    bool operator!=(const ScrubbingAllocator<U>& /*other*/) const noexcept {
        return false;
    }
};

struct HttpListener::Connection {
    explicit Connection(asio::ip::tcp::socket socket)
        : local_port(port_of(socket)), stream(std::move(socket)) {}
    // The port it came to (0: the socket could not say).
    std::uint16_t local_port;
    beast::tcp_stream stream;
    beast::basic_flat_buffer<ScrubbingAllocator<char>> buffer;

    // One request's head; `ec` says why there is none.
    asio::awaitable<error_code> read(bhttp::request_parser<bhttp::empty_body>& parser,
                                     std::chrono::seconds timeout) {
        parser.header_limit(kMaxHeaderBytes);
        parser.body_limit(0);
        error_code ec;
        stream.expires_after(timeout);
        co_await bhttp::async_read(stream, buffer, parser,
                                   asio::redirect_error(asio::use_awaitable, ec));
        co_return ec;
    }
};

HttpListener::HttpListener(asio::io_context& io, HttpHandler& handler, ListenerOptions options,
                           std::function<void()> activity)
    : io_(io), handler_(&handler), options_(std::move(options)), activity_(std::move(activity)) {}

HttpListener::HttpListener(asio::io_context& io, ListenerResponse fixed, ListenerOptions options,
                           std::function<void()> activity)
    : io_(io),
      fixed_(std::move(fixed)),
      options_(std::move(options)),
      activity_(std::move(activity)) {}

void HttpListener::adopt(asio::ip::tcp::socket socket) {
    error_code ignored;
    if (stopping_ || connections_->size() >= options_.max_connections) {
        if (!stopping_ && !fixed_)
            spdlog::warn("{}: {} connections: resetting another", options_.name,
                         connections_->size());
        // Reset, not closed: no TIME_WAIT is left behind.
        socket.set_option(asio::socket_base::linger(true, 0), ignored);
        socket.close(ignored);
        return;
    }
    // An answer may go out in more than one write (a head, then an archive
    // as it arrives): no write waits for the client's delayed ACK (Nagle).
    socket.set_option(asio::ip::tcp::no_delay(true), ignored);
    auto connection = std::make_shared<Connection>(std::move(socket));
    if (fixed_)
        asio::co_spawn(io_, answer_fixed(std::move(connection)), log_failure(options_.name));
    else
        asio::co_spawn(io_, serve(std::move(connection)), log_failure(options_.name));
}

void HttpListener::stop() {
    stopping_ = true;
    error_code ignored;
    for (Connection* connection : *connections_) connection->stream.socket().close(ignored);
}

asio::awaitable<void> HttpListener::serve(std::shared_ptr<Connection> connection) {
    const Tracked<Connection> tracked(connections_, connection.get());
    for (;;) {
        bhttp::request_parser<bhttp::empty_body> parser;
        auto reading = connection->read(parser, options_.read_timeout);  // named first
        if (const error_code ec = co_await std::move(reading)) {
            if (!quiet_end(ec) && ec != asio::error::operation_aborted) {
                auto refusing = write_bad_request(connection->stream);
                co_await std::move(refusing);
            }
            break;
        }
        Head& request = parser.get();
        bool keep_alive = request.keep_alive() && !stopping_;
        const bool head = request.method() == bhttp::verb::head;
        ListenerResponse answer;
        if (request.count(bhttp::field::host) != 1) {
            // RFC 9112, 3.2: exactly one Host field, else 400.
            answer.status = 400;
            answer.body = R"({"errors":["a request needs exactly one Host header"]})";
            keep_alive = false;
        } else if (request.method() != bhttp::verb::get && !head) {
            answer.status = 405;
            answer.body = R"({"errors":["only GET and HEAD"]})";
            answer.headers.emplace_back("Allow", "GET, HEAD");
        } else {
            ListenerRequest asked = request_of(request, connection->local_port);
            auto answering = handler_->answer(std::move(asked));  // named first
            answer = co_await std::move(answering);
        }
        // Only a client the handler recognised keeps the daemon from its idle exit.
        if (answer.authorized && activity_) activity_();
        scrub_authorization(request);
        connection->stream.expires_after(options_.write_timeout);
        // Named first.
        auto writing =
            write_answer(connection->stream, answer, keep_alive, head, options_.write_timeout);
        const error_code ec = co_await std::move(writing);
        if (ec || !keep_alive) break;
    }
    error_code ignored;
    connection->stream.socket().shutdown(asio::ip::tcp::socket::shutdown_send, ignored);
}

// The request is read before the answer is written, so that closing does
// not reset a connection whose request is still unread.
asio::awaitable<void> HttpListener::answer_fixed(std::shared_ptr<Connection> connection) {
    const Tracked<Connection> tracked(connections_, connection.get());
    bhttp::request_parser<bhttp::empty_body> parser;
    auto reading = connection->read(parser, options_.read_timeout);  // named first
    if (quiet_end(co_await std::move(reading))) co_return;
    if (activity_) activity_();
    ListenerResponse answer;
    answer.status = fixed_->status;
    answer.reason = fixed_->reason;
    answer.content_type = fixed_->content_type;
    answer.body = fixed_->body;
    answer.headers = fixed_->headers;
    connection->stream.expires_after(options_.write_timeout);
    auto writing = write_answer(connection->stream, answer, false, false, options_.write_timeout);
    co_await std::move(writing);
    error_code ignored;
    connection->stream.socket().shutdown(asio::ip::tcp::socket::shutdown_send, ignored);
}

}  // namespace hostkeeper::daemon::registry_cache
