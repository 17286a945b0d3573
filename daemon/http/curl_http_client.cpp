#include "daemon/http/curl_http_client.hpp"

#include <curl/curl.h>
#include <spdlog/spdlog.h>
#include <unistd.h>

#include <algorithm>
#include <boost/asio/posix/stream_descriptor.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/redirect_error.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <mutex>
#include <string_view>

#include "daemon/http/url.hpp"

namespace hostkeeper::daemon::http {
namespace asio = boost::asio;

// One request: its easy handle and what it has received so far. The
// awaiting coroutine parks on `done` (never expiring; cancelled when the
// transfer ends).
struct CurlHttpClient::Transfer {
    explicit Transfer(const asio::any_io_executor& io)
        : done(io, std::chrono::steady_clock::time_point::max()) {}
    Transfer(const Transfer&) = delete;
    Transfer& operator=(const Transfer&) = delete;
    ~Transfer() {
        if (headers != nullptr) curl_slist_free_all(headers);
        if (easy != nullptr) curl_easy_cleanup(easy);
    }

    CURL* easy = nullptr;
    curl_slist* headers = nullptr;
    std::optional<proto::Secret> bearer;  // must outlive the transfer; scrubbed on drop
    std::optional<proto::Secret> basic;   // "USER:PASSWORD", likewise
    int upload_fd = -1;                   // a PUT's body, read with pread
    std::uint64_t upload_size = 0;
    std::uint64_t uploaded = 0;
    std::string upload_error;  // why the file could not be sent
    std::size_t max_body = 0;
    bool too_large = false;
    int body_fd = -1;
    BodyObserver observer;
    bool observed = false;   // the body's first piece came: whether and how to tell is decided
    bool observing = false;  // a 200's body: told to `observer`
    std::optional<std::uint64_t> announced;
    std::string write_error;
    int write_errno = 0;  // set with write_error, never 0 then
    char error_buffer[CURL_ERROR_SIZE] = {};
    long timeout_ms = 0;
    asio::steady_timer done;
    bool finished = false;
    HttpResponse response;
    std::string error;  // set when no HTTP response came
};

// A socket curl asked us to watch. The descriptor only lends the fd to
// Asio's reactor: it is released, never closed, by us (curl closes it).
struct CurlHttpClient::Watch {
    Watch(const asio::any_io_executor& io, int fd) : descriptor(io, fd) {}
    asio::posix::stream_descriptor descriptor;
    int what = 0;  // CURL_POLL_IN / OUT / INOUT
    bool reading = false;
    bool writing = false;
};

namespace {

CURLM* multi_of(void* p) {
    return static_cast<CURLM*>(p);
}

std::optional<std::string> env(const char* name) {
    const char* value = std::getenv(name);
    if (value == nullptr || value[0] == '\0') return std::nullopt;
    return std::string(value);
}

// Every value of header `name` in the last response, in order.
std::vector<std::string> header_values(CURL* easy, const char* name) {
    std::vector<std::string> values;
    curl_header* header = nullptr;
    for (std::size_t i = 0; curl_easy_header(easy, name, i, CURLH_HEADER, -1, &header) == CURLHE_OK;
         ++i) {
        values.emplace_back(header->value);
        if (i + 1 >= header->amount) break;
    }
    return values;
}

std::optional<long long> seconds_header(CURL* easy, const char* name) {
    const std::vector<std::string> values = header_values(easy, name);
    if (values.empty()) return std::nullopt;
    char* end = nullptr;
    const long long n = std::strtoll(values.front().c_str(), &end, 10);
    if (end == values.front().c_str() || n < 0) return std::nullopt;
    return n;
}

const char* text_or_empty(const char* text) {
    return text != nullptr ? text : "";
}

}  // namespace

void CurlHttpClient::global_init() {
    static std::once_flag once;
    std::call_once(once, [] {
        if (const CURLcode rc = curl_global_init(CURL_GLOBAL_DEFAULT); rc != CURLE_OK) {
            throw std::runtime_error(std::string("curl_global_init: ") + curl_easy_strerror(rc));
        }
    });
}

void CurlHttpClient::prepare() {
    if ((curl_version_info(CURLVERSION_NOW)->features & CURL_VERSION_THREADSAFE) == 0)
        global_init();
}

CurlOptions CurlHttpClient::from_environment(std::string user_agent,
                                             const std::string& configured_ca_file) {
    CurlOptions options;
    options.user_agent = std::move(user_agent);
    if (!configured_ca_file.empty()) {
        options.ca_file = configured_ca_file;
    } else {
        options.ca_file = env("SSL_CERT_FILE").value_or("");
        options.ca_dir = env("SSL_CERT_DIR").value_or("");
    }
    return options;
}

CurlHttpClient::CurlHttpClient(asio::any_io_executor io, CurlOptions options)
    : io_(std::move(io)), options_(std::move(options)), timer_(io_) {}

void CurlHttpClient::start() {
    if (multi_ != nullptr) return;
    try {
        global_init();
    } catch (const std::exception& e) {
        throw HttpError(e.what());  // a failed request, as its callers expect
    }
    multi_ = curl_multi_init();
    if (multi_ == nullptr) throw HttpError("curl_multi_init failed");
    curl_multi_setopt(multi_of(multi_), CURLMOPT_SOCKETFUNCTION, &CurlHttpClient::on_socket);
    curl_multi_setopt(multi_of(multi_), CURLMOPT_SOCKETDATA, this);
    curl_multi_setopt(multi_of(multi_), CURLMOPT_TIMERFUNCTION, &CurlHttpClient::on_timer);
    curl_multi_setopt(multi_of(multi_), CURLMOPT_TIMERDATA, this);
    // Bounded fan-out per host and overall; curl queues the rest. An HTTP/2
    // connection carries many transfers at once (its streams).
    curl_multi_setopt(multi_of(multi_), CURLMOPT_PIPELINING, static_cast<long>(CURLPIPE_MULTIPLEX));
    curl_multi_setopt(multi_of(multi_), CURLMOPT_MAX_HOST_CONNECTIONS, 8L);
    curl_multi_setopt(multi_of(multi_), CURLMOPT_MAX_TOTAL_CONNECTIONS, 64L);
}

CurlHttpClient::~CurlHttpClient() {
    stop();
    // Out of the reactor first; curl closes its own sockets in the cleanup.
    for (auto& [fd, w] : watches_) w->descriptor.release();
    watches_.clear();
    if (multi_ != nullptr) curl_multi_cleanup(multi_of(multi_));
}

namespace {

void set_content_type(curl_slist*& headers, const HttpRequest& request, const char* fallback) {
    const std::string type =
        "Content-Type: " + (!request.content_type.empty() ? request.content_type
                            : request.media_type.empty()  ? std::string(fallback)
                                                          : request.media_type);
    headers = curl_slist_append(headers, type.c_str());
}

// GET or HEAD, a POST or PUT of the request's body (copied: libcurl keeps
// its own), a PUT of a file (its read callback set by the caller), or a DELETE.
void set_method(CURL* e, curl_slist*& headers, const HttpRequest& request) {
    if (request.method == "PUT" && request.upload_fd >= 0) {
        curl_easy_setopt(e, CURLOPT_UPLOAD, 1L);
        curl_easy_setopt(e, CURLOPT_INFILESIZE_LARGE, static_cast<curl_off_t>(request.upload_size));
        set_content_type(headers, request, "application/octet-stream");
        headers = curl_slist_append(headers, "Expect:");  // no wait for a 100 Continue
    } else if (request.method == "POST" || request.method == "PUT") {
        curl_easy_setopt(e, CURLOPT_POSTFIELDSIZE_LARGE,
                         static_cast<curl_off_t>(request.body.size()));
        curl_easy_setopt(e, CURLOPT_COPYPOSTFIELDS, request.body.c_str());
        if (request.method == "PUT") curl_easy_setopt(e, CURLOPT_CUSTOMREQUEST, "PUT");
        set_content_type(headers, request, "application/json");
    } else if (request.method == "DELETE") {
        curl_easy_setopt(e, CURLOPT_CUSTOMREQUEST, "DELETE");
    } else if (request.method == "GET") {
        curl_easy_setopt(e, CURLOPT_HTTPGET, 1L);
    } else if (request.method == "HEAD") {
        curl_easy_setopt(e, CURLOPT_NOBODY, 1L);
    } else {
        throw HttpError("unsupported HTTP method " + request.method);
    }
}

}  // namespace

asio::awaitable<HttpResponse> CurlHttpClient::fetch(HttpRequest request) {
    start();
    auto transfer = std::make_shared<Transfer>(io_);
    Transfer& t = *transfer;
    t.easy = curl_easy_init();
    if (t.easy == nullptr) throw HttpError("curl_easy_init failed");
    t.max_body = request.max_body;
    t.timeout_ms = static_cast<long>(request.timeout.count());
    t.response.url = request.url;
    t.body_fd = request.body_fd;
    t.upload_fd = request.upload_fd;
    t.upload_size = request.upload_size;
    if (t.body_fd >= 0) t.observer = std::move(request.on_body);
    if (t.body_fd >= 0 &&
        (::ftruncate(t.body_fd, 0) != 0 || ::lseek(t.body_fd, 0, SEEK_SET) != 0)) {
        throw HttpError(std::string("cannot empty the download file: ") + std::strerror(errno));
    }
    const std::string accept = !request.media_type.empty() ? request.media_type
                               : t.body_fd >= 0            ? std::string("*/*")
                                                           : std::string("application/json");
    t.headers = curl_slist_append(nullptr, ("Accept: " + accept).c_str());
    CURL* e = t.easy;
    curl_easy_setopt(e, CURLOPT_URL, request.url.c_str());
    set_method(e, t.headers, request);
    curl_easy_setopt(e, CURLOPT_PROTOCOLS_STR, "https,http");
    curl_easy_setopt(e, CURLOPT_FOLLOWLOCATION,
                     0L);  // the caller follows, deciding where credentials go
    curl_easy_setopt(e, CURLOPT_NOSIGNAL, 1L);
    // HTTP/2 where the server offers it (ALPN), its streams multiplexed on
    // one connection per host; a transfer that starts while that connection
    // is still being set up waits to learn whether it multiplexes rather
    // than opening another.
    curl_easy_setopt(e, CURLOPT_HTTP_VERSION, static_cast<long>(CURL_HTTP_VERSION_2TLS));
    curl_easy_setopt(e, CURLOPT_PIPEWAIT, 1L);
    curl_easy_setopt(e, CURLOPT_TIMEOUT_MS, std::max(1L, t.timeout_ms));
    if (request.connect_timeout.count() > 0)
        curl_easy_setopt(e, CURLOPT_CONNECTTIMEOUT_MS,
                         static_cast<long>(request.connect_timeout.count()));
    if (request.stall_timeout.count() > 0) {
        curl_easy_setopt(e, CURLOPT_LOW_SPEED_LIMIT, 1L);
        curl_easy_setopt(e, CURLOPT_LOW_SPEED_TIME,
                         static_cast<long>(request.stall_timeout.count()));
    }
    curl_easy_setopt(e, CURLOPT_SSL_VERIFYPEER, 1L);
    curl_easy_setopt(e, CURLOPT_SSL_VERIFYHOST, 2L);
    if (!options_.ca_file.empty()) curl_easy_setopt(e, CURLOPT_CAINFO, options_.ca_file.c_str());
    if (!options_.ca_dir.empty()) curl_easy_setopt(e, CURLOPT_CAPATH, options_.ca_dir.c_str());
    curl_easy_setopt(e, CURLOPT_USERAGENT, options_.user_agent.c_str());
    curl_easy_setopt(e, CURLOPT_HTTPHEADER, t.headers);
    curl_easy_setopt(e, CURLOPT_ACCEPT_ENCODING, "");  // whatever this libcurl decodes
    curl_easy_setopt(e, CURLOPT_MAXFILESIZE_LARGE, static_cast<curl_off_t>(t.max_body));
    curl_easy_setopt(e, CURLOPT_WRITEFUNCTION, &CurlHttpClient::on_body);
    curl_easy_setopt(e, CURLOPT_WRITEDATA, &t);
    curl_easy_setopt(e, CURLOPT_ERRORBUFFER, t.error_buffer);
    curl_easy_setopt(e, CURLOPT_PRIVATE, &t);
    if (request.bearer_token) {
        // libcurl's own bearer auth: it also refuses to send it to another host.
        t.bearer = std::move(request.bearer_token);
        curl_easy_setopt(e, CURLOPT_HTTPAUTH, static_cast<long>(CURLAUTH_BEARER));
        curl_easy_setopt(e, CURLOPT_XOAUTH2_BEARER, t.bearer->c_str());
    } else if (request.basic_credentials) {
        t.basic = std::move(request.basic_credentials);
        curl_easy_setopt(e, CURLOPT_HTTPAUTH, static_cast<long>(CURLAUTH_BASIC));
        curl_easy_setopt(e, CURLOPT_USERPWD, t.basic->c_str());
    }
    if (t.upload_fd >= 0) {
        curl_easy_setopt(e, CURLOPT_READFUNCTION, &CurlHttpClient::on_upload);
        curl_easy_setopt(e, CURLOPT_READDATA, &t);
    }
    transfers_.emplace(e, transfer);
    if (const CURLMcode rc = curl_multi_add_handle(multi_of(multi_), e); rc != CURLM_OK) {
        transfers_.erase(e);
        throw HttpError(std::string("curl_multi_add_handle: ") + curl_multi_strerror(rc));
    }
    while (!t.finished) {
        boost::system::error_code ec;
        co_await t.done.async_wait(asio::redirect_error(asio::use_awaitable, ec));
    }
    if (!t.error.empty()) throw HttpError(t.error, t.write_error.empty() ? 0 : t.write_errno);
    co_return std::move(t.response);
}

std::size_t CurlHttpClient::on_body(char* data, std::size_t size, std::size_t count, void* user) {
    auto& t = *static_cast<Transfer*>(user);
    const std::size_t n = size * count;
    if (t.response.body_size + n > t.max_body) {
        t.too_large = true;
        return 0;  // aborts the transfer with CURLE_WRITE_ERROR
    }
    t.response.body_size += n;
    if (t.body_fd < 0) {
        t.response.body.append(data, n);
        return n;
    }
    for (std::size_t done = 0; done < n;) {
        const ssize_t written = ::write(t.body_fd, data + done, n - done);
        if (written < 0 && errno == EINTR) continue;
        if (written <= 0) {
            const int error = errno;
            t.write_error = std::string("writing the download: ") + std::strerror(error);
            t.write_errno = error != 0 ? error : EIO;
            return 0;
        }
        done += static_cast<std::size_t>(written);
    }
    if (t.observer) {
        try {
            tell(t, data, n);
        } catch (const std::exception& e) {  // never through libcurl's C frames
            t.write_error = std::string("following the download: ") + e.what();
            t.write_errno = EIO;
            return 0;
        }
    }
    return n;
}

// The next piece of a PUT's file, read where the last one ended.
std::size_t CurlHttpClient::on_upload(char* data, std::size_t size, std::size_t count, void* user) {
    auto& t = *static_cast<Transfer*>(user);
    const std::uint64_t left = t.upload_size - t.uploaded;
    const std::size_t want = static_cast<std::size_t>(std::min<std::uint64_t>(size * count, left));
    if (want == 0) return 0;
    for (;;) {
        const ssize_t got = ::pread(t.upload_fd, data, want, static_cast<off_t>(t.uploaded));
        if (got < 0 && errno == EINTR) continue;
        if (got <= 0) {
            // The file ended early or could not be read: the upload is cut short.
            t.upload_error = got < 0 ? std::string("reading the upload: ") + std::strerror(errno)
                                     : std::string("reading the upload: the file ended early");
            return CURL_READFUNC_ABORT;
        }
        t.uploaded += static_cast<std::uint64_t>(got);
        return static_cast<std::size_t>(got);
    }
}

// The first piece decides: a 200's body is told, with the length it
// announced unless it came encoded (curl decodes it: the length is not the body's).
void CurlHttpClient::tell(Transfer& t, const char* data, std::size_t n) {
    if (!t.observed) {
        t.observed = true;
        long status = 0;
        curl_easy_getinfo(t.easy, CURLINFO_RESPONSE_CODE, &status);
        t.observing = status == 200;
        curl_off_t length = -1;
        if (curl_easy_getinfo(t.easy, CURLINFO_CONTENT_LENGTH_DOWNLOAD_T, &length) == CURLE_OK &&
            length >= 0 && header_values(t.easy, "Content-Encoding").empty()) {
            t.announced = static_cast<std::uint64_t>(length);
        }
    }
    if (t.observing) t.observer(std::string_view(data, n), t.announced);
}

int CurlHttpClient::on_socket(void* /*easy*/, int fd, int what, void* self, void* /*socket_data*/) {
    static_cast<CurlHttpClient*>(self)->watch(fd, what);
    return 0;
}

int CurlHttpClient::on_timer(void* /*multi*/, long timeout_ms, void* self) {
    auto& client = *static_cast<CurlHttpClient*>(self);
    if (timeout_ms < 0) {
        client.timer_.cancel();
        return 0;
    }
    // Never call back into curl from inside its callback: let the loop do it.
    client.timer_.expires_after(std::chrono::milliseconds(timeout_ms));
    client.timer_.async_wait([&client](const boost::system::error_code& ec) {
        if (!ec) client.on_timeout();
    });
    return 0;
}

void CurlHttpClient::watch(int fd, int what) {
    const auto it = watches_.find(fd);
    if (what == CURL_POLL_REMOVE) {
        if (it != watches_.end()) {
            // Cancels pending waits (their handlers see operation_aborted)
            // and takes the fd out of the reactor before curl closes it.
            it->second->descriptor.release();
            watches_.erase(it);
        }
        return;
    }
    std::shared_ptr<Watch> w;
    if (it == watches_.end()) {
        w = std::make_shared<Watch>(io_, fd);
        watches_.emplace(fd, w);
    } else {
        w = it->second;
    }
    w->what = what;
    arm(w);
}

void CurlHttpClient::arm(const std::shared_ptr<Watch>& w) {
    const int fd = w->descriptor.native_handle();
    const auto wait = [this, fd, w](asio::posix::descriptor_base::wait_type type, bool& pending,
                                    int select) {
        pending = true;
        w->descriptor.async_wait(
            type, [this, fd, w, &pending, select](const boost::system::error_code& ec) {
                pending = false;
                if (ec == asio::error::operation_aborted) return;
                const auto current = watches_.find(fd);
                if (current == watches_.end() || current->second != w) return;  // fd gone or reused
                on_ready(fd, ec ? CURL_CSELECT_ERR : select);
            });
    };
    if ((w->what & CURL_POLL_IN) != 0 && !w->reading) {
        wait(asio::posix::descriptor_base::wait_read, w->reading, CURL_CSELECT_IN);
    }
    if ((w->what & CURL_POLL_OUT) != 0 && !w->writing) {
        wait(asio::posix::descriptor_base::wait_write, w->writing, CURL_CSELECT_OUT);
    }
}

void CurlHttpClient::on_ready(int fd, int select) {
    int running = 0;
    curl_multi_socket_action(multi_of(multi_), fd, select, &running);
    collect_finished();
    // Still watched (and not replaced): wait for the next readiness.
    if (const auto it = watches_.find(fd); it != watches_.end()) arm(it->second);
}

void CurlHttpClient::on_timeout() {
    int running = 0;
    curl_multi_socket_action(multi_of(multi_), CURL_SOCKET_TIMEOUT, 0, &running);
    collect_finished();
}

void CurlHttpClient::collect_finished() {
    int queued = 0;
    while (CURLMsg* message = curl_multi_info_read(multi_of(multi_), &queued)) {
        if (message->msg != CURLMSG_DONE) continue;
        CURL* easy = message->easy_handle;
        const CURLcode result = message->data.result;
        const auto it = transfers_.find(easy);
        if (it == transfers_.end()) continue;
        const std::shared_ptr<Transfer> transfer = it->second;
        finish(*transfer, result);
        curl_multi_remove_handle(multi_of(multi_), easy);
        transfers_.erase(it);
    }
}

void CurlHttpClient::finish(Transfer& t, int code) {
    const auto result = static_cast<CURLcode>(code);
    if (result == CURLE_OK) {
        HttpResponse& r = t.response;
        curl_easy_getinfo(t.easy, CURLINFO_RESPONSE_CODE, &r.status);
        char* text = nullptr;
        curl_easy_getinfo(t.easy, CURLINFO_CONTENT_TYPE, &text);
        r.content_type = text_or_empty(text);
        text = nullptr;
        curl_easy_getinfo(t.easy, CURLINFO_REDIRECT_URL, &text);
        r.location = text_or_empty(text);
        if (const std::vector<std::string> location = header_values(t.easy, "Location");
            r.location.empty() && !location.empty()) {
            try {
                r.location = resolve_url(r.url, location.front());
            } catch (const UrlError&) {
                r.location.clear();  // not a URL: as if none was given
            }
        }
        r.www_authenticate = header_values(t.easy, "WWW-Authenticate");
        if (const std::vector<std::string> digest = header_values(t.easy, "Docker-Content-Digest");
            !digest.empty()) {
            r.content_digest = digest.front();
        }
        curl_off_t length = -1;
        if (curl_easy_getinfo(t.easy, CURLINFO_CONTENT_LENGTH_DOWNLOAD_T, &length) == CURLE_OK &&
            length >= 0) {
            r.content_length = static_cast<std::uint64_t>(length);
        }
        curl_off_t retry_after = 0;
        if (curl_easy_getinfo(t.easy, CURLINFO_RETRY_AFTER, &retry_after) == CURLE_OK &&
            retry_after > 0) {
            r.retry_after = static_cast<long long>(retry_after);
        }
        r.cache_control = header_values(t.easy, "Cache-Control");
        r.age = seconds_header(t.easy, "Age");
        if (const std::vector<std::string> get = header_values(t.easy, "X-Terraform-Get");
            !get.empty()) {
            r.terraform_get = get.front();
        }
    } else if (!t.write_error.empty()) {
        t.error = t.write_error;
    } else if (!t.upload_error.empty()) {
        t.error = t.upload_error;
    } else if (t.too_large || result == CURLE_FILESIZE_EXCEEDED) {
        t.error = "the response body is larger than " + std::to_string(t.max_body / 1024) + " KiB";
    } else if (result == CURLE_OPERATION_TIMEDOUT) {
        t.error =
            fmt::format("timed out: no complete answer within {:.1f} s ({})",
                        static_cast<double>(t.timeout_ms) / 1000.0, text_or_empty(t.error_buffer));
    } else {
        t.error =
            t.error_buffer[0] != '\0' ? std::string(t.error_buffer) : curl_easy_strerror(result);
    }
    t.finished = true;
    t.done.cancel();
}

void CurlHttpClient::stop() {
    timer_.cancel();
    for (auto& [easy, transfer] : transfers_) {
        curl_multi_remove_handle(multi_of(multi_), static_cast<CURL*>(easy));
        transfer->error = "hostkeeperd is stopping";
        transfer->finished = true;
        transfer->done.cancel();
    }
    transfers_.clear();
}

}  // namespace hostkeeper::daemon::http
