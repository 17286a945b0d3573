// tls_server.hpp comes first: it includes <utility>, which Boost 1.74's Asio
// needs before its own headers under g++ 12.
#include "tls_server.hpp"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/ssl.hpp>
#include <boost/asio/write.hpp>
#include <boost/beast/core/flat_buffer.hpp>
#include <boost/beast/http.hpp>
#include <cctype>
#include <cerrno>
#include <cstring>
#include <stdexcept>

namespace hostkeeper::test {
namespace asio = boost::asio;
namespace http = boost::beast::http;
using tcp = asio::ip::tcp;

namespace {

// A listening TCP socket on 127.0.0.1, ephemeral port.
int listen_loopback(unsigned short& port) {
    const int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (fd < 0) throw std::runtime_error(std::string("socket: ") + std::strerror(errno));
    sockaddr_in address{};
    address.sin_family = AF_INET;
    address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    address.sin_port = 0;
    socklen_t length = sizeof address;
    if (::bind(fd, reinterpret_cast<sockaddr*>(&address), length) != 0 || ::listen(fd, 256) != 0 ||
        ::getsockname(fd, reinterpret_cast<sockaddr*>(&address), &length) != 0) {
        const int error = errno;
        ::close(fd);
        throw std::runtime_error(std::string("listen on 127.0.0.1: ") + std::strerror(error));
    }
    port = ntohs(address.sin_port);
    return fd;
}

std::string lowercase(std::string text) {
    std::transform(text.begin(), text.end(), text.begin(),
                   [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
    return text;
}

// "Name.Example:8443" -> "name.example".
std::string host_without_port(const std::string& header) {
    const auto colon = header.rfind(':');
    if (colon != std::string::npos && header.find(']') == std::string::npos &&
        header.find_first_not_of("0123456789", colon + 1) == std::string::npos) {
        return lowercase(header.substr(0, colon));
    }
    return lowercase(header);
}

template <class Message>
std::optional<std::string> field(const Message& message, http::field name) {
    const auto it = message.find(name);
    if (it == message.end()) return std::nullopt;
    return std::string(it->value());
}

}  // namespace

Response json_response(std::string body, unsigned status) {
    Response response;
    response.status = status;
    response.header("Content-Type", "application/json");
    response.body = std::move(body);
    return response;
}

Response redirect(std::string location, unsigned status) {
    Response response;
    response.status = status;
    response.header("Location", std::move(location));
    return response;
}

struct TlsServer::Impl {
    asio::io_context io;  // never run: every operation here is synchronous
    asio::ssl::context tls{asio::ssl::context::tls_server};
    int listen_fd = -1;
    std::size_t next_id = 0;
};

TlsServer::TlsServer(const std::filesystem::path& cert, const std::filesystem::path& key)
    : impl_(std::make_unique<Impl>()) {
    impl_->tls.use_certificate_chain_file(cert.string());
    impl_->tls.use_private_key_file(key.string(), asio::ssl::context::pem);
    impl_->listen_fd = listen_loopback(port_);
    acceptor_thread_ = std::thread([this] { accept_loop(); });
}

TlsServer::~TlsServer() {
    {
        std::lock_guard lock(mutex_);
        stopping_ = true;
        // Wakes the blocked accept(2) (Linux) and every blocked read.
        ::shutdown(impl_->listen_fd, SHUT_RDWR);
        for (const auto& [id, fd] : open_) ::shutdown(fd, SHUT_RDWR);
    }
    stopping_cv_.notify_all();
    acceptor_thread_.join();
    // No new threads after the acceptor ended: threads_ is ours now.
    for (auto& thread : threads_) thread.join();
    ::close(impl_->listen_fd);
}

void TlsServer::accept_loop() {
    for (;;) {
        const int fd = ::accept4(impl_->listen_fd, nullptr, nullptr, SOCK_CLOEXEC);
        std::lock_guard lock(mutex_);
        if (stopping_) {
            if (fd >= 0) ::close(fd);
            return;
        }
        if (fd < 0) {
            if (errno == EINTR || errno == ECONNABORTED) continue;
            return;
        }
        const std::size_t id = ++impl_->next_id;
        open_[id] = fd;
        threads_.emplace_back([this, fd, id] { serve(fd, id); });
    }
}

bool TlsServer::pause(std::optional<std::chrono::milliseconds> duration) {
    std::unique_lock lock(mutex_);
    if (duration) {
        stopping_cv_.wait_for(lock, *duration, [this] { return stopping_; });
    } else {
        stopping_cv_.wait(lock, [this] { return stopping_; });
    }
    return !stopping_;
}

std::optional<Handler> TlsServer::find(const std::string& host, const std::string& path) const {
    std::lock_guard lock(mutex_);
    const auto it = routes_.find({host, path});
    if (it == routes_.end()) return std::nullopt;
    return it->second;
}

// The head and the first answer.pause_after bytes of `out`'s body, a pause
// of answer.pause_midway, then the rest; false when the connection is done.
namespace {

template <typename Stream, typename Pause>
bool write_in_two_parts(Stream& stream, http::response<http::string_body>& out,
                        const Response& answer, Pause pause) {
    boost::system::error_code ec;
    http::response_serializer<http::string_body> head(out);
    http::write_header(stream, head, ec);
    const std::string& body = out.body();
    const std::size_t first = std::min(answer.pause_after, body.size());
    if (!ec) asio::write(stream, asio::buffer(body.data(), first), ec);
    if (ec || !pause(answer.pause_midway)) return false;
    asio::write(stream, asio::buffer(body.data() + first, body.size() - first), ec);
    return !ec;
}

}  // namespace

void TlsServer::serve(int fd, std::size_t id) {
    boost::system::error_code ec;
    tcp::socket socket(impl_->io);
    socket.assign(tcp::v4(), fd, ec);
    if (ec) {
        std::lock_guard lock(mutex_);
        open_.erase(id);
        ::close(fd);
        return;
    }
    asio::ssl::stream<tcp::socket> stream(std::move(socket), impl_->tls);
    // Forget the fd before the stream closes it, so that stop never shuts down
    // a reused descriptor. Declared after the stream: runs before its destructor.
    struct Forget {
        TlsServer& server;
        std::size_t id;
        ~Forget() {
            std::lock_guard lock(server.mutex_);
            server.open_.erase(id);
        }
    } forget{*this, id};

    try {
        stream.handshake(asio::ssl::stream_base::server, ec);
        if (ec) return;
        const std::size_t connection = ++connections_;
        boost::beast::flat_buffer buffer;
        for (;;) {
            http::request<http::string_body> in;
            http::read(stream, buffer, in, ec);
            if (ec) return;

            Request request;
            request.host_header = field(in, http::field::host).value_or("");
            request.host = host_without_port(request.host_header);
            request.method = std::string(in.method_string());
            request.target = std::string(in.target());
            request.path = request.target.substr(0, request.target.find('?'));
            request.authorization = field(in, http::field::authorization);
            request.accept = field(in, http::field::accept);
            request.user_agent = field(in, http::field::user_agent);
            request.content_type = field(in, http::field::content_type);
            request.body = in.body();
            request.connection = connection;
            {
                std::lock_guard lock(mutex_);
                requests_.push_back(request);
            }

            const std::optional<Handler> handler = find(request.host, request.path);
            Response answer;
            if (handler) {
                answer = (*handler)(request);
            } else {
                answer.status = 421;
                answer.header("Content-Type", "text/plain");
                answer.body = "no route for " + request.host + " " + request.path + "\n";
            }
            if (answer.hang) {
                pause(std::nullopt);
                return;
            }
            if (answer.delay.count() > 0 && !pause(answer.delay)) return;

            http::response<http::string_body> out;
            out.version(11);
            out.result(answer.status);
            for (const auto& [name, value] : answer.headers) out.insert(name, value);
            out.body() = std::move(answer.body);
            const bool keep_alive = in.keep_alive() && answer.framing != Response::Framing::close;
            switch (answer.framing) {
                case Response::Framing::content_length:
                    out.content_length(out.body().size());
                    break;
                case Response::Framing::chunked:
                    out.chunked(true);
                    break;
                case Response::Framing::close:
                    break;
            }
            if (!keep_alive) out.keep_alive(false);
            if (answer.pause_midway.count() > 0 &&
                answer.framing == Response::Framing::content_length) {
                if (!write_in_two_parts(stream, out, answer,
                                        [this](auto duration) { return pause(duration); }))
                    return;
            } else {
                http::write(stream, out, ec);
                if (ec) return;
            }
            if (!keep_alive) {
                // close_notify, then until the client hangs up (or stop).
                stream.shutdown(ec);
                return;
            }
        }
    } catch (const std::exception&) {
        // A throwing handler or a Beast surprise: the connection just ends.
    }
}

void TlsServer::route(const std::string& host, const std::string& path, Handler handler) {
    std::lock_guard lock(mutex_);
    routes_[{lowercase(host), path}] = std::move(handler);
}

void TlsServer::route(const std::string& host, const std::string& path, Response response) {
    route(host, path, Handler([response](const Request&) { return response; }));
}

std::vector<Request> TlsServer::requests() const {
    std::lock_guard lock(mutex_);
    return requests_;
}

std::size_t TlsServer::count(const std::string& host, const std::string& path) const {
    std::lock_guard lock(mutex_);
    const std::string wanted = lowercase(host);
    return static_cast<std::size_t>(
        std::count_if(requests_.begin(), requests_.end(),
                      [&](const Request& r) { return r.host == wanted && r.path == path; }));
}

void TlsServer::clear_requests() {
    std::lock_guard lock(mutex_);
    requests_.clear();
}

SilentListener::SilentListener() {
    listen_fd_ = listen_loopback(port_);
    thread_ = std::thread([this] {
        for (;;) {
            const int fd = ::accept4(listen_fd_, nullptr, nullptr, SOCK_CLOEXEC);
            if (fd < 0) {
                if (errno == EINTR || errno == ECONNABORTED) continue;
                return;  // shut down by the destructor
            }
            std::lock_guard lock(mutex_);
            fds_.push_back(fd);
            ++accepted_;
        }
    });
}

SilentListener::~SilentListener() {
    ::shutdown(listen_fd_, SHUT_RDWR);
    thread_.join();
    ::close(listen_fd_);
    for (const int fd : fds_) ::close(fd);
}

}  // namespace hostkeeper::test
