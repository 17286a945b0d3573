#pragma once
// A real HTTPS server for tests, in process: Boost.Beast over OpenSSL on
// 127.0.0.1, an ephemeral port, one thread per connection (synchronous,
// keep-alive). Requests are routed by (Host without port, path) to handlers
// that say exactly what to send: any status and headers (or none), the body
// with a Content-Length, chunked or delimited by closing the connection, after
// a delay, or never (hang until the server stops). Every request is recorded.
//
// Also SilentListener: a TCP port that accepts connections and never says a
// word, for timeouts during the TLS handshake.
//
// Certificates come from tests/support/make_ca.sh. Test infrastructure: small
// and blocking, not fast.

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstddef>
#include <filesystem>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <utility>
#include <vector>

namespace hostkeeper::test {

// What the server received.
struct Request {
    std::string host;         // the Host header without the port, lowercase
    std::string host_header;  // the Host header as sent
    std::string method;
    std::string target;  // as sent, with any query
    std::string path;    // target without the query
    std::optional<std::string> authorization;
    std::optional<std::string> accept;
    std::optional<std::string> user_agent;
    std::optional<std::string> content_type;
    std::string body;
    std::size_t connection = 0;  // which TLS connection it came on (1, 2, ...)
};

// What to answer.
struct Response {
    enum class Framing { content_length, chunked, close };

    unsigned status = 200;
    // Sent as given. The server adds only framing: Content-Length, or
    // Transfer-Encoding: chunked, or Connection: close.
    std::vector<std::pair<std::string, std::string>> headers;
    std::string body;
    Framing framing = Framing::content_length;
    std::chrono::milliseconds delay{0};  // wait this long before answering
    bool hang = false;                   // never answer (until the server stops)
    // With Content-Length framing: the head and the body's first
    // `pause_after` bytes, then this long a pause, then the rest (a
    // download that arrives in two parts).
    std::chrono::milliseconds pause_midway{0};
    std::size_t pause_after = 0;

    Response& header(std::string name, std::string value) {
        headers.emplace_back(std::move(name), std::move(value));
        return *this;
    }
};

// 200, Content-Type: application/json, `body`.
Response json_response(std::string body, unsigned status = 200);
// `status` with a Location header and no body.
Response redirect(std::string location, unsigned status = 302);

using Handler = std::function<Response(const Request&)>;

class TlsServer {
  public:
    // `cert` may be a chain (leaf first); `key` its private key, both PEM.
    TlsServer(const std::filesystem::path& cert, const std::filesystem::path& key);
    TlsServer(const TlsServer&) = delete;
    TlsServer& operator=(const TlsServer&) = delete;
    // Stops listening, ends every open connection (hung handlers included) and
    // joins every thread.
    ~TlsServer();

    unsigned short port() const { return port_; }

    // Adds or replaces the route for (host without port, path). Requests that
    // match no route get 421 text/plain "no route", never a 404: a 404 is a
    // meaningful answer in discovery.
    void route(const std::string& host, const std::string& path, Handler handler);
    void route(const std::string& host, const std::string& path, Response response);

    std::vector<Request> requests() const;
    // Requests received for (host without port, path) (query ignored).
    std::size_t count(const std::string& host, const std::string& path) const;
    // TLS connections whose handshake completed.
    std::size_t connections() const { return connections_.load(); }
    void clear_requests();

  private:
    struct Impl;
    void accept_loop();
    void serve(int fd, std::size_t id);
    // Waits `duration` (forever when nullopt) or until stop; false when stopping.
    bool pause(std::optional<std::chrono::milliseconds> duration);
    std::optional<Handler> find(const std::string& host, const std::string& path) const;

    std::unique_ptr<Impl> impl_;
    unsigned short port_ = 0;
    std::atomic<std::size_t> connections_{0};

    mutable std::mutex mutex_;
    std::condition_variable stopping_cv_;
    bool stopping_ = false;
    std::map<std::pair<std::string, std::string>, Handler> routes_;
    std::vector<Request> requests_;
    std::map<std::size_t, int> open_;  // connection id -> fd, to shut down on stop
    std::vector<std::thread> threads_;
    std::thread acceptor_thread_;
};

// Accepts TCP connections on 127.0.0.1 and keeps them open without reading or
// writing a byte, until destroyed.
class SilentListener {
  public:
    SilentListener();
    SilentListener(const SilentListener&) = delete;
    SilentListener& operator=(const SilentListener&) = delete;
    ~SilentListener();

    unsigned short port() const { return port_; }
    std::size_t accepted() const { return accepted_.load(); }

  private:
    int listen_fd_ = -1;
    unsigned short port_ = 0;
    std::atomic<std::size_t> accepted_{0};
    std::mutex mutex_;
    std::vector<int> fds_;
    std::thread thread_;
};

}  // namespace hostkeeper::test
