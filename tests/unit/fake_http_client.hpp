#pragma once
// A scripted HttpClient for unit tests of discovery, the registry clients and
// the archive cache: answers by URL (a download's body written to its file,
// told to its observer in two halves), records what was asked (and with
// which bearer token), and can hold requests in flight until released:
// before they start, or with half of a download's body written. The real libcurl client is tested
// against a real HTTPS server in the integration tests.

#include <unistd.h>

#include <boost/asio/any_io_executor.hpp>
#include <boost/asio/redirect_error.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "daemon/http/http_client.hpp"

namespace hostkeeper::test {

class FakeHttpClient final : public daemon::http::HttpClient {
  public:
    struct Seen {
        std::string url;
        std::optional<std::string> bearer;
        std::string method;
        std::optional<std::string> basic;  // "USER:PASSWORD"
    };

    explicit FakeHttpClient(const boost::asio::any_io_executor& io)
        : gate_(io, std::chrono::steady_clock::time_point::max()) {}

    // Answers for `url`: a response, or throws daemon::http::HttpError.
    std::map<std::string, std::function<daemon::http::HttpResponse()>> routes;
    // When set, answers every request instead of `routes` (a server that
    // looks at the method and the credentials).
    std::function<daemon::http::HttpResponse(const daemon::http::HttpRequest&)> respond;
    std::vector<Seen> requests;

    void hold() { held_ = true; }
    // Downloads stop after the first half of their body until release().
    void hold_midway() { midway_ = true; }
    void release() {
        held_ = false;
        midway_ = false;
        gate_.cancel();
    }

    boost::asio::awaitable<daemon::http::HttpResponse> fetch(
        daemon::http::HttpRequest request) override {
        requests.push_back({request.url, text_of(request.bearer_token), request.method,
                            text_of(request.basic_credentials)});
        while (held_) {
            boost::system::error_code ec;
            co_await gate_.async_wait(boost::asio::redirect_error(boost::asio::use_awaitable, ec));
        }
        daemon::http::HttpResponse response;
        if (respond) {
            response = respond(request);
        } else {
            const auto route = routes.find(request.url);
            if (route == routes.end())
                throw daemon::http::HttpError("could not resolve host (no route in the test)");
            response = route->second();
        }
        response.url = request.url;
        response.body_size = response.body.size();
        if (request.body_fd >= 0) {  // a download: the body goes to the file, as curl's does
            if (::ftruncate(request.body_fd, 0) != 0)
                throw daemon::http::HttpError("cannot write the body (in the test)");
            const std::string& body = response.body;
            const std::size_t half = body.size() / 2;
            const bool told = request.on_body && response.status == 200;
            write_piece(request, body.substr(0, half), 0, told, body.size());
            while (midway_) {
                boost::system::error_code ec;
                co_await gate_.async_wait(
                    boost::asio::redirect_error(boost::asio::use_awaitable, ec));
            }
            write_piece(request, body.substr(half), half, told, body.size());
            response.body.clear();
        }
        co_return response;
    }

    static daemon::http::HttpResponse json(std::string body, long status = 200,
                                           std::vector<std::string> cache_control = {}) {
        daemon::http::HttpResponse r;
        r.status = status;
        r.content_type = "application/json";
        r.body = std::move(body);
        r.cache_control = std::move(cache_control);
        return r;
    }
    static daemon::http::HttpResponse redirect(std::string location, long status = 302) {
        daemon::http::HttpResponse r;
        r.status = status;
        r.location = std::move(location);
        return r;
    }

  private:
    static std::optional<std::string> text_of(const std::optional<proto::Secret>& secret) {
        return secret ? std::optional<std::string>(std::string(secret->view())) : std::nullopt;
    }
    static void write_piece(const daemon::http::HttpRequest& request, const std::string& piece,
                            std::size_t at, bool told, std::size_t announced) {
        if (::pwrite(request.body_fd, piece.data(), piece.size(), static_cast<off_t>(at)) !=
            static_cast<ssize_t>(piece.size()))
            throw daemon::http::HttpError("cannot write the body (in the test)");
        if (told && !piece.empty()) request.on_body(piece, announced);
    }

    boost::asio::steady_timer gate_;
    bool held_ = false;
    bool midway_ = false;
};

}  // namespace hostkeeper::test
