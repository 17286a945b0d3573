#include "daemon/registry_cache/http_listener.hpp"

#include <spdlog/spdlog.h>

#include <boost/asio/co_spawn.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/redirect_error.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>
#include <cctype>
#include <string_view>

namespace hostkeeper::daemon::registry_cache {
namespace asio = boost::asio;
namespace beast = boost::beast;
namespace http = boost::beast::http;
using boost::system::error_code;

namespace {
constexpr std::uint32_t kMaxHeaderBytes = 16 * 1024;

// The cache's answer; a request it cannot answer (a target that is not
// UTF-8 cannot go into a JSON document, say) still gets one: 400.
asio::awaitable<ListenerResponse> answer_safely(RegistryCache& cache, ListenerRequest asked) {
    std::string failure;
    try {
        auto serving = cache.serve(std::move(asked));  // named first (async/toolchain.hpp)
        co_return co_await std::move(serving);
    } catch (const std::exception& e) {
        failure = e.what();
    }
    spdlog::warn("registry cache: a request could not be answered: {}", failure);
    ListenerResponse answer;
    answer.status = 400;
    answer.body = R"({"errors":["the request cannot be answered: is its path UTF-8?"]})";
    co_return answer;
}

// The first header in `request` that only a web browser sends, by name:
// Origin, or any Sec-Fetch-* (Fetch Metadata). Go's net/http, Terraform's
// client, sends neither.
std::string browser_header(const http::request<http::empty_body>& request) {
    constexpr std::string_view kSecFetch = "sec-fetch-";
    for (const auto& field : request) {
        const std::string_view name(field.name_string().data(), field.name_string().size());
        if (field.name() == http::field::origin) return std::string(name);
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
    explicit Connection(asio::ip::tcp::socket socket) : stream(std::move(socket)) {}
    beast::tcp_stream stream;
    beast::basic_flat_buffer<ScrubbingAllocator<char>> buffer;
};

HttpListener::HttpListener(asio::io_context& io, RegistryCache& cache, ListenerOptions options,
                           std::function<void()> activity)
    : io_(io), cache_(cache), options_(options), activity_(std::move(activity)) {}

void HttpListener::adopt(asio::ip::tcp::socket socket) {
    error_code ignored;
    if (stopping_ || connections_->size() >= options_.max_connections) {
        if (!stopping_)
            spdlog::warn("registry cache: {} connections: resetting another", connections_->size());
        // Reset, not closed: no TIME_WAIT is left behind.
        socket.set_option(asio::socket_base::linger(true, 0), ignored);
        socket.close(ignored);
        return;
    }
    auto connection = std::make_shared<Connection>(std::move(socket));
    asio::co_spawn(io_, serve(std::move(connection)), asio::detached);
}

void HttpListener::stop() {
    stopping_ = true;
    error_code ignored;
    for (Connection* connection : *connections_) connection->stream.socket().close(ignored);
}

asio::awaitable<void> HttpListener::serve(std::shared_ptr<Connection> connection) {
    connections_->insert(connection.get());
    struct Forget {
        std::shared_ptr<std::set<Connection*>> set;
        Connection* connection;
        ~Forget() { set->erase(connection); }
    } forget{connections_, connection.get()};
    for (;;) {
        http::request_parser<http::empty_body> parser;
        parser.header_limit(kMaxHeaderBytes);
        parser.body_limit(0);
        error_code ec;
        connection->stream.expires_after(options_.read_timeout);
        co_await http::async_read(connection->stream, connection->buffer, parser,
                                  asio::redirect_error(asio::use_awaitable, ec));
        if (ec) {
            if (ec != http::error::end_of_stream && ec != asio::error::eof &&
                ec != beast::error::timeout && ec != asio::error::operation_aborted) {
                // A malformed request: a plain 400, then close.
                http::response<http::string_body> bad{http::status::bad_request, 11};
                bad.set(http::field::content_type, "text/plain");
                bad.body() = "bad request\n";
                bad.keep_alive(false);
                bad.prepare_payload();
                co_await http::async_write(connection->stream, bad,
                                           asio::redirect_error(asio::use_awaitable, ec));
            }
            break;
        }
        http::request<http::empty_body>& request = parser.get();
        bool keep_alive = request.keep_alive() && !stopping_;
        const bool head = request.method() == http::verb::head;
        ListenerResponse answer;
        if (request.count(http::field::host) != 1) {
            // RFC 9112, 3.2: exactly one Host field, else 400.
            answer.status = 400;
            answer.body = R"({"errors":["a request needs exactly one Host header"]})";
            keep_alive = false;
        } else if (request.method() != http::verb::get && !head) {
            answer.status = 405;
            answer.body = R"({"errors":["only GET and HEAD"]})";
            answer.headers.emplace_back("Allow", "GET, HEAD");
        } else {
            ListenerRequest asked;
            asked.target = std::string(request.target());
            asked.host_header = std::string(request[http::field::host]);
            if (const auto it = request.find(http::field::authorization); it != request.end()) {
                asked.authorization.emplace(
                    std::string_view(it->value().data(), it->value().size()));
            }
            asked.browser_header = browser_header(request);
            answer = co_await answer_safely(cache_, std::move(asked));
        }
        // Only a client that passed the Host and browser checks keeps the
        // daemon from its idle exit.
        if (answer.authorized && activity_) activity_();
        // The request's header block held the token: scrub what the buffer kept.
        if (const auto it = request.find(http::field::authorization); it != request.end()) {
            // NOLINTNEXTLINE(cppcoreguidelines-pro-type-const-cast): the parser's own buffer
            proto::scrub(const_cast<char*>(it->value().data()), it->value().size());
        }
        connection->stream.expires_after(options_.write_timeout);
        if (answer.file) {
            http::response<http::file_body> response;
            response.result(answer.status);
            response.version(11);
            beast::file_posix file;
            file.native_handle(answer.file->fd.release());
            response.body().reset(std::move(file), ec);
            if (ec) break;
            response.set(http::field::content_type, answer.content_type);
            for (const auto& [name, value] : answer.headers) response.set(name, value);
            response.keep_alive(keep_alive);
            response.prepare_payload();
            if (head) {
                http::response_serializer<http::file_body> serializer(response);
                co_await http::async_write_header(connection->stream, serializer,
                                                  asio::redirect_error(asio::use_awaitable, ec));
            } else {
                co_await http::async_write(connection->stream, response,
                                           asio::redirect_error(asio::use_awaitable, ec));
            }
        } else {
            http::response<http::string_body> response;
            response.result(answer.status);
            response.version(11);
            if (!answer.reason.empty()) response.reason(answer.reason);
            if (!answer.content_type.empty())
                response.set(http::field::content_type, answer.content_type);
            for (const auto& [name, value] : answer.headers) response.set(name, value);
            response.keep_alive(keep_alive);
            if (answer.status != 204 && answer.status != 304) {
                response.body() = std::move(answer.body);
                response.prepare_payload();
            }
            if (head) {
                http::response_serializer<http::string_body> serializer(response);
                co_await http::async_write_header(connection->stream, serializer,
                                                  asio::redirect_error(asio::use_awaitable, ec));
            } else {
                co_await http::async_write(connection->stream, response,
                                           asio::redirect_error(asio::use_awaitable, ec));
            }
        }
        if (ec || !keep_alive) break;
    }
    error_code ignored;
    connection->stream.socket().shutdown(asio::ip::tcp::socket::shutdown_send, ignored);
}

}  // namespace hostkeeper::daemon::registry_cache
