#include "daemon/registry_cache/http_listener.hpp"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <spdlog/spdlog.h>
#include <sys/socket.h>
#include <systemd/sd-daemon.h>
#include <unistd.h>

#include <boost/asio/co_spawn.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/redirect_error.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>
#include <cerrno>
#include <cstring>

#include "daemon/registry_cache/tcp_peer.hpp"

namespace hostkeeper::daemon::registry_cache {
namespace asio = boost::asio;
namespace beast = boost::beast;
namespace http = boost::beast::http;
using boost::system::error_code;

namespace {
constexpr std::uint32_t kMaxHeaderBytes = 16 * 1024;
}  // namespace

int bind_loopback(const std::string& address, std::uint16_t port, std::string& error) {
    const int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (fd < 0) {
        error = std::string("socket: ") + std::strerror(errno);
        return -1;
    }
    const int one = 1;
    ::setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
    sockaddr_in addr{};
    addr.sin_family = AF_INET;
    addr.sin_port = htons(port);
    ::inet_pton(AF_INET, address.c_str(), &addr.sin_addr);
    // NOLINTNEXTLINE(cppcoreguidelines-pro-type-reinterpret-cast): the sockets API
    if (::bind(fd, reinterpret_cast<const sockaddr*>(&addr), sizeof addr) != 0 ||
        ::listen(fd, SOMAXCONN) != 0) {
        const int saved = errno;
        ::close(fd);
        error = address + ":" + std::to_string(port) + ": " + std::strerror(saved) +
                (saved == EADDRINUSE ? " (another process holds the port)" : "");
        return -1;
    }
    return fd;
}

bool is_listener_on(int fd, std::uint16_t port) {
    return sd_is_socket_inet(fd, AF_INET, SOCK_STREAM, 1, port) > 0;
}

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

HttpListener::HttpListener(asio::io_context& io, int listen_fd, RegistryCache& cache,
                           ListenerOptions options, std::function<void()> activity)
    : io_(io),
      acceptor_(io, asio::ip::tcp::v4(), listen_fd),
      cache_(cache),
      options_(options),
      activity_(std::move(activity)) {}

void HttpListener::start() {
    asio::co_spawn(io_, accept_loop(), asio::detached);
}

void HttpListener::stop() {
    stopping_ = true;
    error_code ignored;
    acceptor_.close(ignored);
    for (Connection* connection : *connections_) connection->stream.socket().close(ignored);
}

asio::awaitable<void> HttpListener::accept_loop() {
    while (!stopping_) {
        error_code ec;
        asio::ip::tcp::socket socket =
            co_await acceptor_.async_accept(asio::redirect_error(asio::use_awaitable, ec));
        if (ec) {
            if (stopping_ || ec == asio::error::operation_aborted) break;
            spdlog::warn("registry cache: accept: {}", ec.message());
            asio::steady_timer pause(io_, std::chrono::milliseconds(100));
            co_await pause.async_wait(asio::use_awaitable);
            continue;
        }
        // Only this user's processes: the port is reachable by every local user.
        error_code ignored;
        const auto peer = socket.remote_endpoint(ignored);
        const auto local = socket.local_endpoint(ignored);
        const std::optional<uid_t> uid = loopback_peer_uid(local, peer);
        if (!uid || *uid != ::geteuid()) {
            ++foreign_;
            if (foreign_ <= 5) {
                spdlog::warn(
                    "registry cache: refused a connection from {} (uid {}): only uid {} "
                    "may use this listener",
                    peer.port(), uid ? std::to_string(*uid) : "unknown", ::geteuid());
            }
            socket.close(ignored);
            continue;
        }
        if (connections_->size() >= options_.max_connections) {
            spdlog::warn("registry cache: {} connections: refusing another", connections_->size());
            socket.close(ec);
            continue;
        }
        auto connection = std::make_shared<Connection>(std::move(socket));
        asio::co_spawn(io_, serve(std::move(connection)), asio::detached);
    }
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
        const bool keep_alive = request.keep_alive() && !stopping_;
        const bool head = request.method() == http::verb::head;
        ListenerResponse answer;
        if (request.method() != http::verb::get && !head) {
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
            auto serving = cache_.serve(std::move(asked));  // named first (async/toolchain.hpp)
            answer = co_await std::move(serving);
        }
        // Only a client with the capability keeps the daemon from its idle exit.
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
