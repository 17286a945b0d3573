// RegistryAnswers' registry documents: module versions and downloads,
// provider versions, packages and their published files, in the wire
// formats Terraform reads, downloads pointed at the listener.
#include "daemon/registry_cache/registry_answers.hpp"

#include <boost/asio/co_spawn.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/this_coro.hpp>
#include <optional>
#include <string>
#include <vector>

#include "daemon/cache/answer_cache.hpp"
#include "daemon/registry/registry_documents.hpp"
#include "daemon/registry_cache/wire_answers.hpp"
#include "proto/error.hpp"
#include "proto/registry_address.hpp"
#include "proto/semver.hpp"

namespace hostkeeper::daemon::registry_cache {
namespace asio = boost::asio;
using proto::Error;
using proto::ErrorCode;
using proto::Json;

namespace {

proto::ModuleAddress module_of(const Route& route) {
    return proto::parse_module_address(route.host + "/" + route.name_space + "/" + route.name +
                                       "/" + route.system);
}

proto::ProviderAddress provider_of(const Route& route) {
    return proto::parse_provider_address(route.host + "/" + route.name_space + "/" + route.name);
}

std::string published_label(bool shasums, const std::string& what) {
    return std::string(shasums ? "the SHA256SUMS of " : "the SHA256SUMS signature of ") + what;
}

}  // namespace

ListenerResponse json_response(unsigned status, const Json& body) {
    ListenerResponse out;
    out.status = status;
    out.body = body.dump();
    return out;
}

asio::awaitable<ListenerResponse> RegistryAnswers::answer(const Route& route) {
    switch (route.kind) {
        case RouteKind::provider_archive:
        case RouteKind::module_archive: {
            auto serving = archive_answer(route);  // named first
            co_return co_await std::move(serving);
        }
        case RouteKind::mirror_index:
        case RouteKind::mirror_version: {
            auto serving = mirror_answer(route);
            co_return co_await std::move(serving);
        }
        default: {
            auto serving = registry_answer(route);
            co_return co_await std::move(serving);
        }
    }
}

std::optional<ListenerResponse> RegistryAnswers::kept(const Route& route) const {
    if (!route.registry_port) return std::nullopt;
    return snapshots_.load(DocumentSnapshots::Key(route.base_url + route_path(route)));
}

// Answers that hold only registry metadata and the listener's own URLs: a
// location passed through as given (a signed URL, git::...) is never written.
bool RegistryAnswers::worth_keeping(const Route& route, const ListenerResponse& response) const {
    if (response.status != 200 && response.status != 204) return false;
    switch (route.kind) {
        case RouteKind::module_versions:
        case RouteKind::provider_versions:
        case RouteKind::provider_shasums:
        case RouteKind::provider_signature:
            return true;
        case RouteKind::module_download:
            return response.headers.size() == 1 &&
                   response.headers.front().second.rfind(route.base_url, 0) == 0;
        case RouteKind::provider_package:
            return response.body.find("\"download_url\":\"" + route.base_url) != std::string::npos;
        default:
            return false;
    }
}

// A failure kept on disk and still fresh stands for the registry's answer
// (after a restart too); a fresh failure is kept, a good answer forgets it
// and is kept itself when it is worth keeping, unless it is made of the very
// document already kept under this key (the answer cache may hold a newer
// one that a prefetch brought, which no answer has kept yet).
asio::awaitable<ListenerResponse> RegistryAnswers::registry_answer(const Route& route) {
    if (!route.registry_port) {
        Document ignored;
        auto answering = document_answer(route, ignored);  // named first
        co_return co_await std::move(answering);
    }
    const DocumentSnapshots::Key kept_key(route.base_url + route_path(route));
    if (std::optional<DocumentSnapshots::Failure> kept = snapshots_.load_failure(kept_key)) {
        throw cache::FetchFailure(ErrorCode::registry_failed, kept->message, true, kept->retry_in);
    }
    ListenerResponse out;
    Document made_of;
    try {
        auto answering = document_answer(route, made_of);  // named first
        out = co_await std::move(answering);
    } catch (const cache::FetchFailure& e) {
        if (!e.cached()) snapshots_.save_failure(kept_key, e.what(), e.retry_in());
        throw;
    }
    const bool keep = !kept_from(kept_key, made_of) && worth_keeping(route, out);
    snapshots_.answered(kept_key, out, keep);
    if (keep && snapshots_.kept(kept_key)) kept_from_[kept_key.stem()] = made_of;
    co_return out;
}

bool RegistryAnswers::kept_from(const DocumentSnapshots::Key& key, const Document& made_of) const {
    if (!made_of || !snapshots_.kept(key)) return false;
    const auto it = kept_from_.find(key.stem());
    return it != kept_from_.end() && it->second.lock() == made_of;
}

asio::awaitable<ListenerResponse> RegistryAnswers::document_answer(const Route& route,
                                                                   Document& made_of) {
    switch (route.kind) {
        case RouteKind::module_versions: {
            const proto::ModuleAddress module = module_of(route);
            auto asking = registry_.module_versions(module, false);
            const registry::RegistryAnswer answer = co_await std::move(asking);
            made_of = answer.document;
            co_return json_response(200, module_versions_wire(answer.document->body));
        }
        case RouteKind::module_download: {
            auto answering = module_download_answer(route, made_of);
            co_return co_await std::move(answering);
        }
        case RouteKind::provider_versions: {
            const proto::ProviderAddress provider = provider_of(route);
            auto asking = registry_.provider_versions(provider, std::nullopt, false);
            const registry::RegistryAnswer answer = co_await std::move(asking);
            made_of = answer.document;
            prefetch_likely_package(co_await asio::this_coro::executor, route,
                                    answer.document->body);
            co_return json_response(200, provider_versions_wire(answer.document->body));
        }
        case RouteKind::provider_package:
        case RouteKind::provider_shasums:
        case RouteKind::provider_signature: {
            auto answering = provider_answer(route, made_of);
            co_return co_await std::move(answering);
        }
        default:
            throw Error(ErrorCode::internal, "unrouted request kind");
    }
}

asio::awaitable<ListenerResponse> RegistryAnswers::module_download_answer(const Route& route,
                                                                          Document& made_of) {
    const proto::ModuleAddress module = module_of(route);
    const proto::SemVer version = proto::parse_semver(route.version);
    auto asking = registry_.module_download(module, version, false);
    const registry::RegistryAnswer answer = co_await std::move(asking);
    made_of = answer.document;
    const std::string& location =
        answer.document->body.at("location").get_ref<const std::string&>();
    if (!header_safe(location))
        throw Error(ErrorCode::registry_failed, "the download location of module " +
                                                    module.to_string() + " " + version.to_string() +
                                                    " has a control character");
    std::string served = location;
    if (const std::optional<ModuleArchive> archive = cacheable_module_archive(location)) {
        const std::string key = archives::module_archive_key(archive->url);
        archives::TierItem item;
        item.kind = archives::TierItem::Kind::module;
        item.host = module.host;
        item.namespace_ = module.name_space;
        item.name = module.name;
        item.system = module.system;
        item.version = version.to_string();
        item.location = archive->url;
        item.filename = archive->filename;
        remember(key, {archive->url,
                       {},
                       false,
                       "module " + module.to_string() + " " + version.to_string(),
                       module.host,
                       registry::registry_origin(module.host),
                       std::move(item)});
        served = route.base_url + "archives/" + key + "/" + archive->filename + archive->suffix;
        prefetch(co_await asio::this_coro::executor, key);
    }
    ListenerResponse out;
    out.status = 204;
    out.content_type.clear();
    out.headers.emplace_back("X-Terraform-Get", served);
    co_return out;
}

asio::awaitable<ListenerResponse> RegistryAnswers::provider_answer(const Route& route,
                                                                   Document& made_of) {
    const proto::ProviderAddress provider = provider_of(route);
    const proto::SemVer version = proto::parse_semver(route.version);
    const std::string platform = route.os + "_" + route.arch;
    auto asking = registry_.provider_package(provider, version, platform, std::nullopt, false);
    const registry::RegistryAnswer answer = co_await std::move(asking);
    made_of = answer.document;
    if (route.kind == RouteKind::provider_package) platform_ = platform;  // one the registry has
    const std::string what = provider.to_string() + " " + version.to_string();
    if (route.kind == RouteKind::provider_package) {
        std::string remembered;
        ListenerResponse out = package_answer(route, answer.document->body, what, remembered);
        const asio::any_io_executor io = co_await asio::this_coro::executor;
        // In the order Terraform asks: SHA256SUMS, its signature, the package.
        prefetch_published(io, route.host, answer.document->body, what);
        if (!remembered.empty()) prefetch(io, remembered);
        co_return out;
    }
    auto fetching = published_file_answer(route, answer.document->body, what, made_of);
    co_return co_await std::move(fetching);
}

archives::TierItem RegistryAnswers::provider_item(const Route& route, const std::string& platform,
                                                  const std::string& filename) {
    const proto::ProviderAddress provider = provider_of(route);
    archives::TierItem item;
    item.host = provider.host;
    item.namespace_ = provider.name_space;
    item.name = provider.type;
    item.version = proto::parse_semver(route.version).to_string();
    const auto underscore = platform.find('_');
    item.os = platform.substr(0, underscore);
    item.arch = underscore == std::string::npos ? "" : platform.substr(underscore + 1);
    item.filename = filename;
    return item;
}

ListenerResponse RegistryAnswers::package_answer(const Route& route, const Json& body,
                                                 const std::string& what, std::string& remembered) {
    std::string shasum = body.at("hashes").at(0).get<std::string>().substr(3);
    const std::string& filename = body.at("filename").get_ref<const std::string&>();
    const std::string& upstream_url = body.at("download_url").get_ref<const std::string&>();
    std::string archive_url = upstream_url;
    if (safe_filename(filename)) {
        const std::string key = "providers/" + shasum;
        remember(key, {upstream_url, body.at("hashes").get<std::vector<std::string>>(), true,
                       "provider " + what + " " + route.os + "_" + route.arch, route.host,
                       registry::registry_origin(route.host),
                       provider_item(route, route.os + "_" + route.arch, filename)});
        archive_url = route.base_url + "archives/" + key + "/" + filename;
        remembered = key;
    }
    Route sums = route;
    sums.kind = RouteKind::provider_shasums;
    return json_response(
        200, provider_package_wire(body, archive_url, route.base_url + route_path(sums)));
}

asio::awaitable<ListenerResponse> RegistryAnswers::published_file_answer(const Route& route,
                                                                         const Json& body,
                                                                         const std::string& what,
                                                                         Document& made_of) {
    const bool shasums = route.kind == RouteKind::provider_shasums;
    const char* field = shasums ? "shasums_url" : "shasums_signature_url";
    const auto it = body.find(field);
    if (it == body.end()) throw Error(ErrorCode::not_found, what + " publishes no " + field);
    auto fetching = registry_.published_file(it->get<std::string>(), published_label(shasums, what),
                                             route.host);
    const registry::RegistryAnswer file = co_await std::move(fetching);
    made_of = file.document;
    ListenerResponse out;
    out.content_type = shasums ? "text/plain; charset=utf-8" : "application/octet-stream";
    const auto& bytes = file.document->body.get_binary();
    out.body.assign(bytes.begin(), bytes.end());
    co_return out;
}

void RegistryAnswers::prefetch_published(const asio::any_io_executor& io, const std::string& host,
                                         const Json& body, const std::string& what) {
    for (const bool shasums : {true, false}) {
        const auto it = body.find(shasums ? "shasums_url" : "shasums_signature_url");
        if (it == body.end() || !it->is_string() || published_prefetches_ >= kMaxPrefetches)
            continue;
        ++published_prefetches_;
        asio::co_spawn(
            io, fetching_published(it->get<std::string>(), published_label(shasums, what), host),
            asio::detached);
    }
}

// A failure is the answer cache's, as a failure of Terraform's own request
// for the file would be: that request meets it or fetches again.
asio::awaitable<void> RegistryAnswers::fetching_published(std::string url, std::string label,
                                                          std::string host) {
    try {
        auto fetching = registry_.published_file(std::move(url), std::move(label), std::move(host));
        (void)co_await std::move(fetching);
    } catch (const std::exception&) {
    }
    --published_prefetches_;
}

void RegistryAnswers::prefetch_likely_package(const asio::any_io_executor& io, const Route& route,
                                              const Json& body) {
    if (published_prefetches_ >= kMaxPrefetches) return;
    std::optional<std::string> version;
    try {
        version = registry::newest_release(body, platform_);
    } catch (const std::exception&) {
        return;  // not the document the registry module makes: nothing to guess from
    }
    if (!version) return;
    ++published_prefetches_;
    asio::co_spawn(io, fetching_package(route, std::move(*version), platform_), asio::detached);
}

// A failure is the answer cache's, as for fetching_published().
asio::awaitable<void> RegistryAnswers::fetching_package(Route route, std::string version,
                                                        std::string platform) {
    std::optional<Json> body;
    std::string what;
    try {
        const proto::ProviderAddress provider = provider_of(route);
        const proto::SemVer parsed = proto::parse_semver(version);
        what = provider.to_string() + " " + parsed.to_string();
        auto asking = registry_.provider_package(provider, parsed, platform, std::nullopt, false);
        body = (co_await std::move(asking)).document->body;
    } catch (const std::exception&) {
    }
    --published_prefetches_;
    if (body) prefetch_published(co_await asio::this_coro::executor, route.host, *body, what);
}

}  // namespace hostkeeper::daemon::registry_cache
