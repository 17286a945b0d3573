#pragma once
// HttpClient on libcurl's multi interface, driven by the daemon's Asio
// io_context (as in curl's asiohiper example): curl says which sockets to
// watch and when to wake it; Asio does the waiting. No thread per request;
// connections are reused across requests (the multi handle's pool). libcurl's
// headers appear only in the .cpp.

#include <boost/asio/any_io_executor.hpp>
#include <boost/asio/steady_timer.hpp>
#include <memory>
#include <string>
#include <unordered_map>

#include "daemon/http/http_client.hpp"

namespace hostkeeper::daemon::http {

struct CurlOptions {
    std::string user_agent;
    std::string ca_file;  // "" : libcurl's default (the system bundle)
    std::string ca_dir;   // "" : none
};

class CurlHttpClient final : public HttpClient {
  public:
    // Once per process. With a libcurl whose initialization is thread-safe
    // (CURL_VERSION_THREADSAFE), the first fetch does it; with another, call
    // it before any thread starts: prepare() says which.
    static void global_init();
    // Initializes libcurl now unless its initialization is thread-safe, in
    // which case it waits for the first fetch: TLS libraries stay unloaded
    // (unpaged) in a daemon that serves only credentials.
    static void prepare();

    CurlHttpClient(boost::asio::any_io_executor io, CurlOptions options);
    ~CurlHttpClient() override;

    boost::asio::awaitable<HttpResponse> fetch(HttpRequest request) override;

    // Fails every request in flight ("hostkeeperd is stopping").
    void stop();

    // The CA settings a daemon uses: `ca_file` from the configuration wins,
    // else SSL_CERT_FILE / SSL_CERT_DIR as Terraform (Go) honours them.
    static CurlOptions from_environment(std::string user_agent,
                                        const std::string& configured_ca_file);

  private:
    struct Transfer;
    struct Watch;

    static int on_socket(void* easy, int fd, int what, void* self, void* socket_data);
    static int on_timer(void* multi, long timeout_ms, void* self);
    static std::size_t on_body(char* data, std::size_t size, std::size_t count, void* transfer);
    static std::size_t on_upload(char* data, std::size_t size, std::size_t count, void* transfer);
    static void tell(Transfer& t, const char* data, std::size_t n);
    void watch(int fd, int what);
    void arm(const std::shared_ptr<Watch>& w);
    void on_ready(int fd, int select);
    void on_timeout();
    void collect_finished();
    void finish(Transfer& transfer, int result);
    void start();  // the multi handle, made on first use

    boost::asio::any_io_executor io_;
    CurlOptions options_;
    void* multi_ = nullptr;  // CURLM*, once started
    boost::asio::steady_timer timer_;
    std::unordered_map<int, std::shared_ptr<Watch>> watches_;
    std::unordered_map<void*, std::shared_ptr<Transfer>> transfers_;  // by CURL*
};

}  // namespace hostkeeper::daemon::http
