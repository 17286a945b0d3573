#include "daemon/upstream/upstream.hpp"

#include "daemon/http/http_text.hpp"
#include "daemon/http/url.hpp"
#include "daemon/upstream/bearer_token.hpp"

namespace hostkeeper::daemon::upstream {
namespace asio = boost::asio;

namespace {

// What the final response means. `keyring_problem`: why the token could not
// be read ("" when it could, or there is none).
void judge(const UpstreamRequest& request, const std::string& keyring_problem, http::TokenUse sent,
           Verdict& out) {
    const http::HttpResponse& response = *out.response;
    const std::string& url = response.url;
    const long status = response.status;
    if (!keyring_problem.empty() && (status == 401 || status == 403 || status == 404)) {
        // Asked without the token the keyring could not give: the answer says
        // nothing about the server. Not cached as "there is none" and not a
        // refusal: the last good answer may stand in.
        out.error = url + ": HTTP status " + std::to_string(status) +
                    " to a request without credentials: those for " + request.token_host +
                    " could not be read from the keyring: " + keyring_problem;
        return;
    }
    out.directives = http::parse_cache_control(response.cache_control);
    if (status == 404) {
        out.kind = Verdict::Kind::none;
        return;
    }
    if (status != 200 && !(request.accept_204 && status == 204)) {
        out.retry_after = response.retry_after;
        out.stale_ok = !http::is_refusal(status);
        out.error = url + ": HTTP status " + std::to_string(status);
        if (request.explain_refusal && (status == 401 || status == 403))
            out.error += http::refusal_reason(sent, request.token_host, request.token_origin, "");
        return;
    }
    if (request.json_media_type) {
        if (const std::string problem = http::json_media_type_problem(response.content_type);
            !problem.empty()) {
            out.error = url + ": " + problem;
            return;
        }
    }
    out.kind = Verdict::Kind::document;
}

}  // namespace

asio::awaitable<Verdict> Upstream::fetch(UpstreamRequest request) {
    Verdict out;
    out.url_asked = request.url;
    std::string keyring_problem;
    // No token_host: a file fetched without credentials (SHA256SUMS, as Terraform fetches it).
    std::optional<proto::Secret> token;
    if (!request.token_host.empty()) {
        token = co_await bearer_token(credentials_, request.token_host, request.purpose,
                                      &keyring_problem, request.send_refused);
    }
    http::FetchResult fetched = co_await http::fetch_following(http_, request.url, token,
                                                               request.token_origin, request.rules);
    requests_ += fetched.requests;
    out.requests = fetched.requests;
    if (!fetched.response) {
        out.error = std::move(fetched.error);
        co_return out;
    }
    // A keyring problem is judged on its own (judge): not a refusal's reason here.
    const http::TokenUse sent =
        http::token_use(token.has_value(), "", fetched.response->url, request.token_origin);
    out.response = std::move(fetched.response);
    out.token_sent = sent == http::TokenUse::sent;
    if (request.judges_token && out.token_sent && out.response->status == 401)
        credentials_.token_rejected(request.token_host, out.response->url, 401);
    judge(request, keyring_problem, sent, out);
    co_return out;
}

Verdict Upstream::failed(std::string error) {
    Verdict out;
    out.error = std::move(error);
    return out;
}

UpstreamStats Upstream::stats(const cache::AnswerCacheStats& cache) const {
    UpstreamStats s;
    static_cast<cache::AnswerCacheStats&>(s) = cache;
    s.upstream_requests = requests_;
    s.upstream_failures = failures_;
    return s;
}

}  // namespace hostkeeper::daemon::upstream
