// RegistryAnswers' archives (from the store, fetched from where an answer
// named them, with the token of the host that named them on its own
// origin), the network mirror, and the archives remembered.
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/redirect_error.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <chrono>
#include <exception>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "daemon/registry_cache/registry_answers.hpp"
#include "daemon/registry_cache/wire_answers.hpp"
#include "daemon/upstream/bearer_token.hpp"
#include "proto/error.hpp"
#include "proto/registry_address.hpp"
#include "proto/semver.hpp"

namespace hostkeeper::daemon::registry_cache {
namespace asio = boost::asio;
using proto::Error;
using proto::ErrorCode;
using proto::Json;

namespace {

std::string last_segment(const std::string& url) {
    const std::string path = url.substr(0, url.find_first_of("?#"));
    return path.substr(path.rfind('/') + 1);
}

// A redirect to the archive's upstream URL. Terraform follows it for module
// archives (go-getter's HTTP getter) and provider packages alike.
// Throws registry_failed for a URL that cannot go into a header line.
ListenerResponse pass_through(const std::string& url) {
    if (!header_safe(url))
        throw Error(ErrorCode::registry_failed,
                    "an archive URL has a control character: it cannot be passed through");
    ListenerResponse out;
    out.status = 302;
    out.content_type.clear();
    out.headers.emplace_back("Location", url);
    return out;
}

}  // namespace

void RegistryAnswers::remember(const std::string& key, PendingArchive pending) {
    // The oldest named goes first when there are too many.
    if (pending_.count(key) == 0) {
        if (pending_.size() >= kMaxPending) {
            pending_.erase(pending_order_.front());
            pending_order_.pop_front();
        }
        pending_order_.push_back(key);
    }
    pending_[key] = std::move(pending);
}

asio::awaitable<ListenerResponse> RegistryAnswers::archive_answer(const Route& route) {
    auto finding = archives_.find(route.key);  // named first
    if (std::optional<archives::Archive> found = co_await std::move(finding)) {
        ListenerResponse out;
        out.content_type = "application/octet-stream";
        out.file.emplace(found->fd.release());
        out.hold = std::move(found->lease);
        co_return out;
    }
    auto starting = prefetch_started(route.key);  // named first
    co_await std::move(starting);
    if (const auto failed = prefetch_failures_.find(route.key);
        failed != prefetch_failures_.end()) {
        const PrefetchFailure failure = failed->second;
        prefetch_failures_.erase(failed);
        if (std::chrono::steady_clock::now() - failure.at < kPrefetchFailureLife)
            std::rethrow_exception(failure.error);
    }
    auto requesting = pending_request(route.key);  // named first
    std::optional<archives::ArchiveRequest> request = co_await std::move(requesting);
    if (!request) {
        throw Error(ErrorCode::not_found,
                    "this archive is not in hostkeeper's cache and no registry answer named it "
                    "(run init again)");
    }
    const std::string upstream_url = request->url;
    ListenerResponse out;
    out.content_type = "application/octet-stream";
    try {
        auto getting = archives_.get(std::move(*request));
        archives::Archive got = co_await std::move(getting);
        out.file.emplace(got.fd.release());
        // Still downloading: the listener sends it as it comes.
        out.growing = std::move(got.growing);
        out.hold = std::move(got.lease);
    } catch (const archives::StoreUnwritable&) {
        // The store cannot take it (the store logs why, once): Terraform
        // fetches it from where the registry said, as it would without the
        // cache, and checks a provider package against the shasum of the
        // package document as it always does.
        out = pass_through(upstream_url);
    }
    co_return out;
}

asio::awaitable<std::optional<archives::ArchiveRequest>> RegistryAnswers::pending_request(
    const std::string& key) {
    const auto it = pending_.find(key);
    if (it == pending_.end()) co_return std::nullopt;
    // A copy: the map may change while the credentials are read.
    const PendingArchive pending = it->second;
    archives::ArchiveRequest request;
    request.key = key;
    request.url = pending.url;
    request.published = pending.published;
    request.verify = pending.verify;
    request.what = pending.what;
    request.tier_item = pending.tier_item;
    // Named first.
    auto asking = download_credentials(pending.token_host, pending.token_origin, pending.what);
    request.credentials = co_await std::move(asking);
    co_return request;
}

void RegistryAnswers::prefetch(const asio::any_io_executor& io, const std::string& key) {
    prefetch_failures_.erase(key);  // named again: tried again
    if (prefetches_ >= kMaxPrefetches || prefetches_starting_.count(key) != 0) return;
    ++prefetches_;
    prefetches_starting_.emplace(key, std::make_shared<asio::steady_timer>(
                                          io, std::chrono::steady_clock::time_point::max()));
    asio::co_spawn(io, prefetching(key), asio::detached);
}

asio::awaitable<void> RegistryAnswers::prefetch_started(const std::string& key) {
    const auto it = prefetches_starting_.find(key);
    if (it == prefetches_starting_.end()) co_return;
    const std::shared_ptr<asio::steady_timer> signal = it->second;
    boost::system::error_code ignored;  // cancelled: it started, or failed
    co_await signal->async_wait(asio::redirect_error(asio::use_awaitable, ignored));
}

// Its failures are the store's to count and log. A download that failed
// (not a store that cannot take it: then Terraform's request is passed
// through) answers the archive's next request, so that one failure makes
// one upstream request.
asio::awaitable<void> RegistryAnswers::prefetching(std::string key) {
    std::exception_ptr failed;
    try {
        auto finding = archives_.find(key);  // named first
        if (!co_await std::move(finding)) {
            auto requesting = pending_request(key);  // named first
            if (std::optional<archives::ArchiveRequest> request = co_await std::move(requesting)) {
                // Returns once its first bytes are in (the download goes on),
                // or with the download's failure.
                auto getting = archives_.get(std::move(*request));  // named first
                (void)co_await std::move(getting);
            }
        }
    } catch (const archives::StoreUnwritable&) {
    } catch (const std::exception&) {
        failed = std::current_exception();
    }
    --prefetches_;
    if (failed) prefetch_failed(key, failed);
    if (const auto it = prefetches_starting_.find(key); it != prefetches_starting_.end()) {
        it->second->cancel();
        prefetches_starting_.erase(it);
    }
}

// Not a coroutine (GCC bug 109224).
void RegistryAnswers::prefetch_failed(const std::string& key, const std::exception_ptr& error) {
    const auto now = std::chrono::steady_clock::now();
    std::erase_if(prefetch_failures_, [now](const auto& entry) {
        return now - entry.second.at >= kPrefetchFailureLife;
    });
    if (prefetch_failures_.size() < kMaxPending) prefetch_failures_[key] = {error, now};
}

// The token of `host` for a download from its own origin (the keyring's
// problem when it cannot say: the download then goes without, as the
// registry's documents do). Read only when an archive is downloaded.
asio::awaitable<archives::DownloadCredentials> RegistryAnswers::download_credentials(
    std::string host, std::string origin, std::string what) {
    archives::DownloadCredentials out;
    if (host.empty()) co_return out;
    auto reading =
        upstream::bearer_token(credentials_, host, "downloading " + what, &out.keyring_problem);
    out.token = co_await std::move(reading);
    out.host = std::move(host);
    out.origin = std::move(origin);
    co_return out;
}

asio::awaitable<ListenerResponse> RegistryAnswers::mirror_answer(const Route& route) {
    const std::optional<registry::Mirror>& mirror = registry_.default_mirror();
    if (!mirror)
        throw Error(ErrorCode::not_found, "no network mirror is configured (registry.mirror_url)");
    const proto::ProviderAddress provider =
        proto::parse_provider_address(route.host + "/" + route.name_space + "/" + route.name);
    if (route.kind == RouteKind::mirror_index) {
        auto asking = registry_.provider_versions(provider, mirror, false);
        const registry::RegistryAnswer answer = co_await std::move(asking);
        co_return json_response(200, mirror_index_wire(answer.document->body));
    }
    const proto::SemVer version = proto::parse_semver(route.version);
    // A mirror's VERSION.json holds every platform: any valid one asks for it.
    const std::string platform = "linux_amd64";
    auto asking = registry_.provider_package(provider, version, platform, mirror, false);
    const registry::RegistryAnswer answer = co_await std::move(asking);
    co_return json_response(
        200, mirror_version(route, answer.document->body,
                            "provider " + provider.to_string() + " " + version.to_string()));
}

// Not a coroutine: it makes a lambda (GCC bug 109224).
Json RegistryAnswers::mirror_version(const Route& route, const Json& body,
                                     const std::string& what) {
    const std::optional<registry::Mirror>& mirror = registry_.default_mirror();
    const std::string mirror_host = mirror ? mirror->host : std::string();
    const std::string mirror_base = mirror ? mirror->base : std::string();
    return mirror_version_wire(body, [&](const std::string& platform, const Json& entry) {
        std::optional<std::string> served;
        const std::optional<std::string> sha = zh_sha256(entry.at("hashes"));
        const std::string& url = entry.at("url").get_ref<const std::string&>();
        const std::string filename = last_segment(url);
        if (!sha || !safe_filename(filename)) return served;
        const std::string key = "providers/" + *sha;
        // A mirror's archives get the mirror's token, on the mirror's origin.
        remember(key, {url, entry.at("hashes").get<std::vector<std::string>>(), true,
                       what + " " + platform, mirror_host, mirror_base,
                       provider_item(route, platform, filename)});
        served = route.base_url + "archives/" + key + "/" + filename;
        return served;
    });
}

}  // namespace hostkeeper::daemon::registry_cache
