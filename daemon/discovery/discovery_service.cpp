#include "daemon/discovery/discovery_service.hpp"

#include <spdlog/spdlog.h>

#include <exception>
#include <variant>

#include "daemon/credentials/token_expiry.hpp"

namespace hostkeeper::daemon::discovery {
namespace asio = boost::asio;
using std::chrono::seconds;

std::string_view to_string(DiscoverySource source) noexcept {
    switch (source) {
        case DiscoverySource::network:
            return "network";
        case DiscoverySource::cache:
            return "cache";
        case DiscoverySource::stale:
            return "stale";
        case DiscoverySource::forced:
            return "forced";
    }
    return "network";
}

DiscoveryService::DiscoveryService(asio::any_io_executor io, http::HttpClient& http,
                                   credentials::TokenLifecycle& credentials,
                                   DiscoveryOptions options, Clock clock)
    : options_(std::move(options)),
      clock_(std::move(clock)),
      cache_(io, clock_, upstream::answer_cache_options(options_), "discovery of"),
      credentials_(credentials),
      http_(http),
      upstream_(http, credentials),
      login_(http, credentials, *this, options_.timeout),
      auto_rotation_(
          std::move(io), credentials, options_.rotate,
          [this](const std::string& host) { return rotate_lifetime(host); },
          [this](std::string host) { return rotate_token(std::move(host)); }) {
    // Forced services answer as a document served at https://NAME/ would.
    for (const auto& [host, services] : options_.forced) {
        const std::string url = discovery_url(host);
        forced_.emplace(
            host, std::make_shared<const DiscoveryDocument>(url, resolve_services(services, url)));
    }
    auto_rotation_.start();
}

std::chrono::seconds DiscoveryService::rotate_lifetime(const std::string& host) const {
    const auto lifetime = options_.host_rotate_lifetime.find(host);
    return lifetime != options_.host_rotate_lifetime.end() ? lifetime->second
                                                           : options_.rotate_lifetime;
}

asio::awaitable<DiscoveryAnswer> DiscoveryService::discover(std::string host, bool refresh_now) {
    if (const auto forced = forced_.find(host); forced != forced_.end()) {
        ++forced_hits_;
        DiscoveryAnswer answer;
        answer.source = DiscoverySource::forced;
        answer.document = forced->second;
        co_return answer;
    }
    // Named first.
    auto fetch_host = [this, host] { return fetch(host); };
    auto lookup = cache_.get(host, refresh_now, fetch_host, host);
    const Cache::Result result = co_await std::move(lookup);
    if (const auto* failed = std::get_if<Cache::Failed>(&result)) {
        throw DiscoveryError(failed->message, failed->cached, failed->retry_in);
    }
    const auto& found = std::get<Cache::Answer>(result);
    DiscoveryAnswer answer;
    answer.source = found.source == cache::AnswerSource::cache   ? DiscoverySource::cache
                    : found.source == cache::AnswerSource::stale ? DiscoverySource::stale
                                                                 : DiscoverySource::network;
    answer.document = found.document;
    answer.age = found.age;
    answer.expires_in = found.expires_in;
    answer.error = found.error;
    co_return answer;
}

asio::awaitable<DiscoveryService::Cache::Fetched> DiscoveryService::fetch(std::string host) {
    upstream::UpstreamRequest request;
    request.url = discovery_url(host);
    request.token_host = host;
    request.token_origin = request.url;
    request.purpose = "discovery of " + host;
    request.judges_token = false;
    request.rules.max_body = kMaxDiscoveryDocument;
    request.rules.max_redirects = kMaxDiscoveryRedirects;
    request.rules.timeout = options_.timeout;
    // Named first.
    auto fetching = upstream_.fetch(std::move(request));
    upstream::Verdict verdict = co_await std::move(fetching);
    co_return settle(std::move(verdict));
}

// Out of the coroutine (GCC bug 109224).
DiscoveryService::Cache::Fetched DiscoveryService::settle(upstream::Verdict verdict) {
    const upstream::Freshness fresh{options_.ttl, options_.min_ttl, options_.max_ttl,
                                    options_.negative_ttl};
    return upstream_.settle<DiscoveryDocument>(
        std::move(verdict), fresh, clock_(),
        [](const http::HttpResponse& response, const std::string&) {
            return DiscoveryDocument(response.url,
                                     parse_discovery_document(response.body, response.url));
        },
        [](const std::string& url) { return DiscoveryDocument(url, Services{}); });
}

asio::awaitable<TokenCheck> DiscoveryService::check_token(std::string host) {
    // Named first.
    auto checking =
        discovery::check_token(upstream_, credentials_, std::move(host), options_.timeout);
    co_return co_await std::move(checking);
}

namespace {

void log_learned(const std::string& host, const TokenCheck& check) {
    if (check.learned_expiry) {
        spdlog::info("the token of {} expires at {}, as its token list says", host,
                     credentials::rfc3339_text(*check.learned_expiry));
    } else if (!check.expiry_note.empty()) {
        spdlog::debug("the expiry of {}'s token: {}", host, check.expiry_note);
    }
}

}  // namespace

asio::awaitable<void> DiscoveryService::learn_expiry(std::string host) {
    auto checking = check_token(host);  // named first
    const TokenCheck check = co_await std::move(checking);
    log_learned(host, check);
}

namespace {

// The tfe.v2 URL of a discovery answer, or a failure in `out`.
std::string tfe_service(const std::string& host, const DiscoveryAnswer& answer,
                        TokenRotation& out) {
    const auto tfe = answer.services().services.find("tfe.v2");
    if (tfe != answer.services().services.end() && tfe->is_string()) return tfe->get<std::string>();
    out.failed = TokenRotation::Step::service;
    out.url = answer.url();
    out.message = host + " offers no tfe.v2 service (" + answer.url() +
                  "): only HCP Terraform and Terraform Enterprise tokens can be rotated";
    return {};
}

// The discovery of `host` for a rotation: its answer, or a failure in `out`.
asio::awaitable<std::optional<DiscoveryAnswer>> discover_for_rotation(DiscoveryService& service,
                                                                      std::string host,
                                                                      TokenRotation& out) {
    std::optional<DiscoveryAnswer> answer;
    try {
        auto discovering = service.discover(host, false);  // named first
        answer = co_await std::move(discovering);
    } catch (const DiscoveryError& e) {
        out.failed = TokenRotation::Step::discovery;
        out.message = e.what();
    }
    co_return answer;
}

}  // namespace

asio::awaitable<TokenRotation> DiscoveryService::rotate_token(std::string host) {
    TokenRotation out;
    auto discovering = discover_for_rotation(*this, host, out);  // named first
    const std::optional<DiscoveryAnswer> answer = co_await std::move(discovering);
    if (!answer) co_return out;
    std::string tfe = tfe_service(host, *answer, out);
    if (tfe.empty()) co_return out;
    RotationOptions options;
    options.lifetime = rotate_lifetime(host);
    options.timeout = options_.timeout;
    auto rotating = discovery::rotate_token(http_, credentials_, std::move(host), std::move(tfe),
                                            std::move(options));  // named first
    co_return co_await std::move(rotating);
}

std::size_t DiscoveryService::flush() {
    return cache_.flush();
}

std::size_t DiscoveryService::flush(const std::string& host) {
    return cache_.flush_if([&host](const std::string& key) { return key == host; });
}

DiscoveryStats DiscoveryService::stats() const {
    DiscoveryStats s;
    static_cast<upstream::UpstreamStats&>(s) = upstream_.stats(cache_.stats());
    s.forced = forced_hits_;
    return s;
}

void DiscoveryService::stop() {
    auto_rotation_.stop();
    cache_.stop();
}

}  // namespace hostkeeper::daemon::discovery
