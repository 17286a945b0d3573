#pragma once
// One HTTP request, no redirects followed: the interface discovery, the
// registry clients, token rotation, login and the fleet tier talk to (GET or
// HEAD, a POST or PUT with a body, a PUT of a file's bytes, or a DELETE).
// The libcurl adapter implements it; unit tests put a scripted fake in its
// place.

#include <boost/asio/awaitable.hpp>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <optional>
#include <stdexcept>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "proto/secret.hpp"

namespace hostkeeper::daemon::http {

// Told of each piece of a 200 response's body once body_fd has it: the
// piece, and the body's length as the response announced it (nullopt when
// it announced none, or sent it encoded). Called on the client's executor
// from inside the client's own callbacks: it must not call the client.
using BodyObserver =
    std::function<void(std::string_view piece, std::optional<std::uint64_t> announced)>;

struct HttpRequest {
    std::string url;
    std::string method = "GET";  // "GET", "HEAD", "POST", "PUT" or "DELETE"
    std::string body;            // a POST's or PUT's body, sent as `media_type`
    // Content-Type of the body and the Accept header ("": application/json,
    // or anything for a download).
    std::string media_type;
    // A POST body's Content-Type when it is not `media_type` (a form body
    // answered with JSON); "": `media_type`'s.
    std::string content_type;
    std::optional<proto::Secret>
        bearer_token;  // sent as "Authorization: Bearer ..." to this URL only
    // "USER:PASSWORD", sent as "Authorization: Basic ..." to this URL only
    // (not with bearer_token).
    std::optional<proto::Secret> basic_credentials;
    // A PUT's body read from this file instead of `body`: `upload_size`
    // bytes from its start (pread: its offset is left alone).
    int upload_fd = -1;
    std::uint64_t upload_size = 0;
    std::chrono::milliseconds timeout{11000};      // the whole exchange
    std::chrono::milliseconds connect_timeout{0};  // TCP and TLS set up; 0: libcurl's default
    // Given up when no byte moves for this long; 0: only `timeout` bounds it.
    std::chrono::seconds stall_timeout{0};
    std::size_t max_body =
        std::size_t{1024} * 1024;  // larger bodies are an error, announced or not
    // When set, the body is written to this file (emptied first), not kept in
    // HttpResponse::body: for downloads. Any Content-Type is accepted.
    int body_fd = -1;
    BodyObserver on_body;  // with body_fd: see BodyObserver; optional
};

struct HttpResponse {
    long status = 0;
    std::string url;           // the URL that answered
    std::string content_type;  // "" when the server sent none
    // The Location header, resolved against `url` (a redirect's target, or
    // where a created resource lives); "" when none.
    std::string location;
    std::vector<std::string> cache_control;  // every Cache-Control header
    std::optional<long long> age;            // the Age header, seconds
    std::optional<long long> retry_after;    // Retry-After, in seconds from now
    std::string terraform_get;  // X-Terraform-Get (a module's download location); "" when none
    std::vector<std::string> www_authenticate;  // every WWW-Authenticate header
    std::string content_digest;  // Docker-Content-Digest (an OCI registry's); "" when none
    std::optional<std::uint64_t> content_length;  // as announced; nullopt when none
    std::string body;
    std::size_t body_size = 0;  // bytes received (kept in `body`, or written to body_fd)
};

// A request that got no HTTP response: network, TLS, timeout, body too large,
// or a failed write of the body to HttpRequest::body_fd (with its errno).
class HttpError : public std::runtime_error {
  public:
    using std::runtime_error::runtime_error;
    HttpError(const std::string& message, int write_errno)
        : std::runtime_error(message), write_errno_(write_errno) {}
    // The errno of the failed write to body_fd; 0 for any other failure.
    int write_errno() const noexcept { return write_errno_; }

  private:
    int write_errno_ = 0;
};

class HttpClient {
  public:
    HttpClient() = default;
    HttpClient(const HttpClient&) = delete;
    HttpClient& operator=(const HttpClient&) = delete;
    virtual ~HttpClient() = default;
    // Throws HttpError.
    virtual boost::asio::awaitable<HttpResponse> fetch(HttpRequest request) = 0;
};

}  // namespace hostkeeper::daemon::http
