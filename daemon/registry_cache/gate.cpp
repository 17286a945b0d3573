#include "daemon/registry_cache/gate.hpp"

#include <spdlog/spdlog.h>

#include <exception>

#include "daemon/cache/answer_cache.hpp"
#include "daemon/registry_cache/error_answers.hpp"
#include "proto/error.hpp"
#include "proto/hostname.hpp"

namespace hostkeeper::daemon::registry_cache {
namespace asio = boost::asio;
using proto::Error;
using proto::ErrorCode;

namespace {

unsigned status_of(const Error& e) {
    switch (e.code()) {
        case ErrorCode::not_found:
        case ErrorCode::unsupported_service:
            return 404;
        case ErrorCode::bad_request:
        case ErrorCode::bad_host:
            return 400;
        case ErrorCode::keyring_locked:
        case ErrorCode::keyring_unavailable:
        case ErrorCode::no_default_collection:
        case ErrorCode::keyring_error:
            return 503;
        default:
            return 502;
    }
}

bool archive_or_mirror(RouteKind kind) {
    return kind == RouteKind::provider_archive || kind == RouteKind::module_archive ||
           kind == RouteKind::mirror_index || kind == RouteKind::mirror_version;
}

}  // namespace

// A request it cannot answer (a target that is not UTF-8 cannot go into a
// JSON document, say) still gets one: 400.
asio::awaitable<ListenerResponse> Gate::answer(ListenerRequest request) {
    std::string failure;
    try {
        auto serving = checked(std::move(request));  // named first
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

ListenerResponse Gate::refuse(unsigned status, const std::string& message) {
    ++refused_;
    return error_response(status, message);
}

// The port a request came to: its connection's, else (a socket that could
// not say) the registry port's, when this daemon is registered for it.
std::optional<std::uint16_t> Gate::port_of(const ListenerRequest& request) const {
    if (request.local_port != 0) return request.local_port;
    return routing_.port();
}

// A request refused before its route is read; none when the cache is on,
// `port` known and the request is Terraform's to this listener.
std::optional<ListenerResponse> Gate::refusal(const ListenerRequest& request,
                                              std::optional<std::uint16_t> port) {
    if (!routing_.active()) return refuse(404, "the registry cache is off");
    if (!port) return refuse(503, "hostkeeperd is not registered for the registry port");
    const std::string listen = listen_address(*port);
    if (request.host_header != listen &&
        request.host_header != "localhost:" + std::to_string(*port))
        return refuse(403, "the Host header must name this listener (" + listen + ")");
    // A web page the user opened reaches the listener too: its requests
    // carry headers Go's HTTP client (Terraform's) never sends.
    if (!request.browser_header.empty())
        return refuse(403, "a web browser's request (it carries " + request.browser_header +
                               "): the registry cache answers Terraform and OpenTofu");
    return std::nullopt;
}

asio::awaitable<ListenerResponse> Gate::checked(ListenerRequest request) {
    ++requests_;
    const std::optional<std::uint16_t> port = port_of(request);
    if (std::optional<ListenerResponse> refused = refusal(request, port))
        co_return std::move(*refused);
    ListenerResponse response;
    Route route;
    try {
        route = parse_target(request.target);
        // The answer's URLs point back at the listener the request came to.
        route.base_url = base_url(*port);
        route.registry_port = port == routing_.port();
    } catch (const OldPrefixTarget& e) {
        response = refuse(410, e.what());
    } catch (const RouteError&) {
        response = refuse(404, "not found");
    }
    if (response.status == 200) {
        std::string authorization(request.authorization ? request.authorization->view() : "");
        auto answering = answer_route(std::move(route), std::move(authorization));  // named first
        response = co_await std::move(answering);
    }
    response.authorized = true;
    co_return response;
}

asio::awaitable<ListenerResponse> Gate::answer_route(Route route, std::string authorization) {
    struct Scrub {
        std::string& text;
        ~Scrub() { proto::scrub(text); }
    } scrub_authorization{authorization};
    ListenerResponse response;
    std::optional<Error> failed;
    try {
        if (!archive_or_mirror(route.kind)) route.host = proto::normalize_hostname(route.host);
        auto answering = archive_or_mirror(route.kind) ? answers_.answer(route)
                                                       : registry_answer(route, authorization);
        response = co_await std::move(answering);  // named first
    } catch (const cache::FetchFailure& e) {
        // The last answer kept on disk stands in, as the answer cache's stale
        // one would have before a restart.
        if (std::optional<ListenerResponse> kept = answers_.kept(route)) {
            spdlog::warn("registry cache: {}; serving the answer kept on disk", e.what());
            response = std::move(*kept);
            ++from_disk_;
        } else {
            response = error_response(status_of(e), e.what());
            if (e.retry_in().count() > 0)
                response.headers.emplace_back("Retry-After", std::to_string(e.retry_in().count()));
        }
    } catch (const Error& e) {
        failed = e;
    } catch (const std::exception& e) {
        failed = Error(ErrorCode::internal, e.what());
    }
    if (failed) response = error_response(status_of(*failed), failed->what());
    // Given out after the token check, from the network or from disk: its
    // SHA256SUMS may be asked for now.
    if (route.kind == RouteKind::provider_package && response.status == 200) {
        if (answered_packages_.size() >= kMaxAnswered) answered_packages_.clear();
        answered_packages_.insert(route_path(route));
    }
    co_return response;
}

// A routed host's registry request, once its token checked.
asio::awaitable<ListenerResponse> Gate::registry_answer(const Route& route,
                                                        const std::string& authorization) {
    if (!routing_.routes(route.host))
        co_return refuse(404, route.host + " is not routed through hostkeeper's registry cache");
    // Whether the request carries the host's own token (a host without one
    // takes any).
    std::string purpose = "a registry cache request for " + route.host;
    auto checking = credentials_.check_bearer(route.host, authorization, std::move(purpose));
    const credentials::BearerAnswer bearer = co_await std::move(checking);  // named first
    if (!bearer.problem.empty())
        co_return refuse(
            503, "the credentials of " + route.host + " cannot be checked: " + bearer.problem);
    if (std::optional<ListenerResponse> refused = token_refusal(route, bearer.match))
        co_return std::move(*refused);
    auto following = routing_.follow_discovery(route.host);
    co_await std::move(following);
    auto serving = answers_.answer(route);
    co_return co_await std::move(serving);
}

std::optional<ListenerResponse> Gate::token_refusal(const Route& route,
                                                    credentials::BearerAnswer::Match bearer) {
    if (bearer == credentials::BearerAnswer::Match::no_token) return std::nullopt;
    // Terraform fetches SHA256SUMS and its signature without credentials,
    // as it fetches archives: only this user's connections reach them ...
    if (route.kind == RouteKind::provider_shasums || route.kind == RouteKind::provider_signature) {
        // ... but only for a package whose document this listener gave out
        // with the host's credentials: a connection of this user alone must
        // not make the daemon fetch a private registry's documents with its token.
        Route package = route;
        package.kind = RouteKind::provider_package;
        if (answered_packages_.count(route_path(package)) != 0) return std::nullopt;
        return refuse(401, "ask for the package document first, with the credentials stored for " +
                               route.host);
    }
    if (bearer == credentials::BearerAnswer::Match::current) return std::nullopt;
    return refuse(401, "this request must carry the credentials stored for " + route.host);
}

}  // namespace hostkeeper::daemon::registry_cache
