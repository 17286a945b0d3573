#include "daemon/registry_cache/registry_cache.hpp"

#include <openssl/crypto.h>
#include <openssl/sha.h>
#include <spdlog/spdlog.h>
#include <unistd.h>

#include <array>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/detached.hpp>
#include <exception>
#include <vector>

#include "daemon/registry_cache/error_answers.hpp"
#include "daemon/registry_cache/wire_answers.hpp"
#include "daemon/upstream/bearer_token.hpp"
#include "proto/error.hpp"
#include "proto/file_io.hpp"
#include "proto/hostname.hpp"
#include "proto/registry_address.hpp"
#include "proto/semver.hpp"

namespace hostkeeper::daemon::registry_cache {
namespace asio = boost::asio;
using proto::Error;
using proto::ErrorCode;
using proto::Json;

namespace {

constexpr std::chrono::minutes kLearnAgain{10};

// Compared as SHA-256 digests, in constant time: neither the content nor the
// length of the secret shows in how long a refusal takes.
bool equal_secret(std::string_view a, std::string_view b) {
    std::array<unsigned char, SHA256_DIGEST_LENGTH> da{};
    std::array<unsigned char, SHA256_DIGEST_LENGTH> db{};
    SHA256(reinterpret_cast<const unsigned char*>(a.data()), a.size(),  // NOLINT: OpenSSL's API
           da.data());
    SHA256(reinterpret_cast<const unsigned char*>(b.data()), b.size(),  // NOLINT: OpenSSL's API
           db.data());
    return CRYPTO_memcmp(da.data(), db.data(), da.size()) == 0;
}

// A name under .invalid (RFC 6761), such as the probe item of `hostkeeper
// doctor`, resolves nowhere: there is nothing to discover or route.
bool never_a_registry(const std::string& host) {
    const std::string_view name = std::string_view(host).substr(0, host.rfind(':'));
    constexpr std::string_view kInvalid = ".invalid";
    return name == kInvalid.substr(1) || (name.size() > kInvalid.size() &&
                                          name.substr(name.size() - kInvalid.size()) == kInvalid);
}

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

}  // namespace

RegistryCache::RegistryCache(asio::any_io_executor io, std::optional<CacheConfig> config,
                             std::filesystem::path state_file, std::filesystem::path snapshot_dir,
                             credentials::CredentialService& credentials,
                             discovery::DiscoveryService& discovery,
                             registry::RegistryService& registry, archives::ArchiveStore& archives)
    : io_(std::move(io)),
      config_(std::move(config)),
      credentials_(credentials),
      discovery_(discovery),
      registry_(registry),
      archives_(archives),
      snapshots_(std::move(snapshot_dir)) {
    if (!config_) return;
    routed_.emplace(config_->hosts, std::move(state_file), config_->tfrc_files, base_url_);
    if (std::string problem = routed_->load(); !problem.empty())
        spdlog::warn("registry cache: {}; starting with the named hosts only", problem);
    // The files are written once the registry port's state is known.
    // The named hosts are discovered at start; the learned ones when used.
    for (const std::string& host : config_->hosts) {
        asio::co_spawn(io_, discover_and_route(host, false), asio::detached);
    }
}

void RegistryCache::port_registered(std::uint16_t port) {
    held_ = true;
    port_error_.clear();
    if (!routed_) return;
    port_ = port;
    base_url_ = base_url(port);
    routed_->base_url(base_url_);
    routed_->suspend(false);
    files_decided_ = true;
    write_files();
}

void RegistryCache::port_lost(std::string why) {
    held_ = false;
    port_error_ = std::move(why);
}

void RegistryCache::port_unavailable(std::string why) {
    held_ = false;
    port_error_ = std::move(why);
    if (!routed_) return;
    const bool was_suspended = files_decided_ && routed_->suspended();
    routed_->suspend(true);
    files_decided_ = true;
    if (!was_suspended) write_files();
}

bool RegistryCache::routes(const std::string& host) const {
    return routed_ && routed_->routed(host);
}

void RegistryCache::write_files() {
    if (!files_decided_) return;
    try {
        routed_->write();
        files_error_.clear();
    } catch (const std::exception& e) {
        files_error_ = e.what();
        spdlog::error("registry cache: cannot write its files: {}", e.what());
    }
}

void RegistryCache::learn(const std::string& host) {
    if (!routed_ || stopped_ || routed_->routed(host) || never_a_registry(host)) return;
    const auto now = std::chrono::steady_clock::now();
    const auto it = learning_.find(host);
    if (it != learning_.end() && now - it->second < kLearnAgain) return;
    if (learning_.size() >= kMaxPending) learning_.clear();
    learning_[host] = now;
    asio::co_spawn(io_, discover_and_route(host, false), asio::detached);
}

asio::awaitable<void> RegistryCache::discover_and_route(std::string host, bool refresh) {
    std::string failure;
    try {
        auto discovering = discovery_.discover(host, refresh);  // named first (async/toolchain.hpp)
        const discovery::DiscoveryAnswer answer = co_await std::move(discovering);
        seen_[host] = answer.document;
        if (routed_->discovered(host, answer.services().services)) {
            spdlog::info("registry cache: {} {}", host,
                         routed_->routed(host) ? "routed through the listener"
                                               : "no longer routed (it offers no registry)");
            write_files();
        }
    } catch (const std::exception& e) {
        failure = e.what();
    }
    if (!failure.empty()) {
        spdlog::info("registry cache: {} not routed: {}", host, failure);
        routed_->failed(host, failure);
    }
}

// A routed host's block follows its discovery document: a new document
// (refreshed by any request) with other services rewrites the files.
asio::awaitable<void> RegistryCache::follow_discovery(std::string host) {
    std::shared_ptr<const discovery::DiscoveryDocument> document;
    try {
        auto discovering = discovery_.discover(host, false);  // named first (async/toolchain.hpp)
        const discovery::DiscoveryAnswer answer = co_await std::move(discovering);
        document = answer.document;
    } catch (const std::exception&) {
        co_return;  // an outage changes no block; the request says what failed
    }
    std::shared_ptr<const discovery::DiscoveryDocument>& seen = seen_[host];
    if (seen == document) co_return;
    seen = document;
    if (routed_->discovered(host, document->services.services)) write_files();
}

asio::awaitable<Json> RegistryCache::sync(std::vector<std::string> hosts) {
    if (!routed_)
        throw Error(ErrorCode::unsupported_service,
                    "the registry cache is off: run hostkeeper setup --registry-cache");
    if (hosts.empty()) {
        for (const auto& [host, entry] : routed_->hosts()) hosts.push_back(host);
    }
    for (const std::string& host : hosts) {
        // Named first (async/toolchain.hpp).
        auto routing = discover_and_route(host, true);
        co_await std::move(routing);
    }
    co_return status();
}

Json RegistryCache::status() const {
    if (!config_) return Json{{"enabled", false}};
    Json files = Json::array();
    for (const auto& file : config_->tfrc_files) files.push_back(file.string());
    const archives::ArchiveStats a = archives_.stats();
    return {{"enabled", true},
            {"listen", port_ ? Json(listen_address(*port_)) : Json(nullptr)},
            {"held", held_},
            {"held_by", held_ ? Json("hostkeeper-portd") : Json(nullptr)},
            {"error", held_ ? Json(nullptr) : Json(port_error_)},
            {"blocks_withdrawn", files_decided_ && routed_->suspended()},
            {"config_file", config_->origin.string()},
            {"tfrc_files", std::move(files)},
            {"files_error", files_error_.empty() ? Json(nullptr) : Json(files_error_)},
            {"hosts", routed_->status()},
            {"requests", requests_},
            {"refused", refused_},
            {"archives",
             {{"count", a.count},
              {"bytes", a.bytes},
              {"max_bytes", a.max_bytes},
              {"downloads", a.downloads},
              {"hits", a.hits},
              {"evictions", a.evictions},
              {"failures", a.failures},
              {"passed_through", a.passed_through},
              {"store_problem", a.store_problem.empty() ? Json(nullptr) : Json(a.store_problem)}}}};
}

asio::awaitable<ListenerResponse> RegistryCache::serve(ListenerRequest request) {
    ++requests_;
    if (!config_) {
        ++refused_;
        co_return error_response(404, "the registry cache is off");
    }
    if (!port_) {
        ++refused_;
        co_return error_response(503, "hostkeeperd is not registered for the registry port");
    }
    const std::string listen = listen_address(*port_);
    if (request.host_header != listen &&
        request.host_header != "localhost:" + std::to_string(*port_)) {
        ++refused_;
        co_return error_response(403, "the Host header must name this listener (" + listen + ")");
    }
    // A web page the user opened reaches the listener too: its requests
    // carry headers Go's HTTP client (Terraform's) never sends.
    if (!request.browser_header.empty()) {
        ++refused_;
        co_return error_response(403, "a web browser's request (it carries " +
                                          request.browser_header +
                                          "): the registry cache answers Terraform and OpenTofu");
    }
    Route route;
    try {
        route = parse_target(request.target);
    } catch (const OldPrefixTarget& e) {
        ++refused_;
        ListenerResponse gone = error_response(410, e.what());
        gone.authorized = true;
        co_return gone;
    } catch (const RouteError&) {
        ++refused_;
        ListenerResponse missing = error_response(404, "not found");
        missing.authorized = true;
        co_return missing;
    }
    std::string authorization(request.authorization ? request.authorization->view() : "");
    // Named first (async/toolchain.hpp).
    auto answering = answer(std::move(route), std::move(authorization));
    ListenerResponse response = co_await std::move(answering);
    response.authorized = true;
    co_return response;
}

asio::awaitable<ListenerResponse> RegistryCache::answer(Route route, std::string authorization) {
    struct Scrub {
        std::string& text;
        ~Scrub() { proto::scrub(text); }
    } scrub_authorization{authorization};
    ListenerResponse response;
    std::optional<Error> failed;
    try {
        switch (route.kind) {
            case RouteKind::provider_archive:
            case RouteKind::module_archive: {
                auto serving = archive_answer(route);
                co_return co_await std::move(serving);
            }
            case RouteKind::mirror_index:
            case RouteKind::mirror_version: {
                auto serving = mirror_answer(route);
                co_return co_await std::move(serving);
            }
            default:
                break;
        }
        route.host = proto::normalize_hostname(route.host);
        if (!routed_->routed(route.host)) {
            ++refused_;
            co_return error_response(
                404, route.host + " is not routed through hostkeeper's registry cache");
        }
        // The host's own token, or nothing for a host without one.
        std::string problem;
        const std::string purpose = "a registry cache request for " + route.host;
        auto looking_up = upstream::bearer_token(credentials_, route.host, purpose, &problem);
        const std::optional<proto::Secret> token = co_await std::move(looking_up);
        if (!problem.empty()) {
            ++refused_;
            co_return error_response(
                503, "the credentials of " + route.host + " cannot be checked: " + problem);
        }
        // Terraform fetches SHA256SUMS and its signature without credentials,
        // as it fetches archives: only this user's connections reach them.
        const bool file = route.kind == RouteKind::provider_shasums ||
                          route.kind == RouteKind::provider_signature;
        // ... but only for a package whose document this listener gave out
        // with the host's credentials: a connection of this user alone must not make
        // the daemon fetch a private registry's documents with its token.
        if (token && file) {
            Route package = route;
            package.kind = RouteKind::provider_package;
            if (answered_packages_.count(route_path(package)) == 0) {
                ++refused_;
                co_return error_response(401,
                                         "ask for the package document first, with the "
                                         "credentials stored for " +
                                             route.host);
            }
        }
        if (token && !file) {
            std::string expected = "Bearer ";
            expected.append(token->view());
            const bool ok = equal_secret(authorization, expected);
            proto::scrub(expected);
            if (!ok) {
                ++refused_;
                co_return error_response(
                    401, "this request must carry the credentials stored for " + route.host);
            }
        }
        auto following = follow_discovery(route.host);
        co_await std::move(following);
        auto serving = registry_answer(route);
        response = co_await std::move(serving);
        if (worth_keeping(route, response))
            snapshots_.save(base_url_ + route_path(route), response);
    } catch (const cache::FetchFailure& e) {
        // The last answer kept on disk stands in, as the answer cache's stale
        // one would have before a restart.
        if (std::optional<ListenerResponse> kept = snapshots_.load(base_url_ + route_path(route))) {
            spdlog::warn("registry cache: {}; serving the answer kept on disk", e.what());
            response = std::move(*kept);
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
        if (answered_packages_.size() >= kMaxPending) answered_packages_.clear();
        answered_packages_.insert(route_path(route));
    }
    co_return response;
}

}  // namespace hostkeeper::daemon::registry_cache
