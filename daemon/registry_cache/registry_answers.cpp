// RegistryCache's answers: the registry documents (module and provider),
// the archives, the network mirror, and which of them are kept on disk.
#include <exception>
#include <string>
#include <vector>

#include "daemon/cache/answer_cache.hpp"
#include "daemon/registry_cache/registry_cache.hpp"
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

std::string last_segment(const std::string& url) {
    const std::string path = url.substr(0, url.find_first_of("?#"));
    return path.substr(path.rfind('/') + 1);
}

// A redirect to the archive's upstream URL. Terraform follows it for module
// archives (go-getter's HTTP getter) and provider packages alike.
// Throws registry_failed for a URL with a control character (it becomes a
// header line: a CR or LF in it would add headers or responses).
ListenerResponse pass_through(const std::string& url) {
    for (const char c : url) {
        if (static_cast<unsigned char>(c) < 0x20 || c == 0x7f)
            throw Error(ErrorCode::registry_failed,
                        "an archive URL has a control character: it cannot be passed through");
    }
    ListenerResponse out;
    out.status = 302;
    out.content_type.clear();
    out.headers.emplace_back("Location", url);
    return out;
}

}  // namespace

ListenerResponse json_response(unsigned status, const Json& body) {
    ListenerResponse out;
    out.status = status;
    out.body = body.dump();
    return out;
}

// Answers that hold only registry metadata and the listener's own URLs: a
// location passed through as given (a signed URL, git::...) is never written.
bool RegistryCache::worth_keeping(const Route& route, const ListenerResponse& response) const {
    if (response.status != 200 && response.status != 204) return false;
    switch (route.kind) {
        case RouteKind::module_versions:
        case RouteKind::provider_versions:
        case RouteKind::provider_shasums:
        case RouteKind::provider_signature:
            return true;
        case RouteKind::module_download:
            return response.headers.size() == 1 &&
                   response.headers.front().second.rfind(base_url_, 0) == 0;
        case RouteKind::provider_package:
            return response.body.find("\"download_url\":\"" + base_url_) != std::string::npos;
        default:
            return false;
    }
}

void RegistryCache::remember(const std::string& key, PendingArchive pending) {
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

// A failure kept on disk and still fresh stands for the registry's answer
// (after a restart too); a fresh failure is kept, a good answer forgets it.
asio::awaitable<ListenerResponse> RegistryCache::registry_answer(const Route& route) {
    const std::string kept_key = base_url_ + route_path(route);
    if (std::optional<DocumentSnapshots::Failure> kept = snapshots_.load_failure(kept_key)) {
        throw cache::FetchFailure(ErrorCode::registry_failed, kept->message, true, kept->retry_in);
    }
    ListenerResponse out;
    try {
        switch (route.kind) {
            case RouteKind::module_versions: {
                const proto::ModuleAddress module = proto::parse_module_address(
                    route.host + "/" + route.name_space + "/" + route.name + "/" + route.system);
                auto asking = registry_.module_versions(module, false);
                const registry::RegistryAnswer answer = co_await std::move(asking);
                out = json_response(200, module_versions_wire(answer.document->body));
                break;
            }
            case RouteKind::module_download: {
                const proto::ModuleAddress module = proto::parse_module_address(
                    route.host + "/" + route.name_space + "/" + route.name + "/" + route.system);
                const proto::SemVer version = proto::parse_semver(route.version);
                auto asking = registry_.module_download(module, version, false);
                const registry::RegistryAnswer answer = co_await std::move(asking);
                const std::string& location =
                    answer.document->body.at("location").get_ref<const std::string&>();
                // It becomes a header line: a CR or LF in it would add headers or responses.
                for (const char c : location) {
                    if (static_cast<unsigned char>(c) < 0x20 || c == 0x7f)
                        throw Error(ErrorCode::registry_failed,
                                    "the download location of module " + module.to_string() + " " +
                                        version.to_string() + " has a control character");
                }
                std::string served = location;
                if (const std::optional<ModuleArchive> archive =
                        cacheable_module_archive(location)) {
                    const std::string key = archives::module_archive_key(archive->url);
                    remember(key, {archive->url,
                                   {},
                                   false,
                                   "module " + module.to_string() + " " + version.to_string()});
                    served =
                        base_url_ + "archives/" + key + "/" + archive->filename + archive->suffix;
                }
                out.status = 204;
                out.content_type.clear();
                out.headers.emplace_back("X-Terraform-Get", served);
                break;
            }
            case RouteKind::provider_versions: {
                const proto::ProviderAddress provider = proto::parse_provider_address(
                    route.host + "/" + route.name_space + "/" + route.name);
                auto asking = registry_.provider_versions(provider, std::nullopt, false);
                const registry::RegistryAnswer answer = co_await std::move(asking);
                out = json_response(200, provider_versions_wire(answer.document->body));
                break;
            }
            case RouteKind::provider_package:
            case RouteKind::provider_shasums:
            case RouteKind::provider_signature: {
                const proto::ProviderAddress provider = proto::parse_provider_address(
                    route.host + "/" + route.name_space + "/" + route.name);
                const proto::SemVer version = proto::parse_semver(route.version);
                const std::string platform = route.os + "_" + route.arch;
                auto asking =
                    registry_.provider_package(provider, version, platform, std::nullopt, false);
                const registry::RegistryAnswer answer = co_await std::move(asking);
                const Json& body = answer.document->body;
                if (route.kind == RouteKind::provider_package) {
                    std::string shasum = body.at("hashes").at(0).get<std::string>().substr(3);
                    const std::string& filename = body.at("filename").get_ref<const std::string&>();
                    const std::string& upstream_url =
                        body.at("download_url").get_ref<const std::string&>();
                    std::string archive_url = upstream_url;
                    if (safe_filename(filename)) {
                        const std::string key = "providers/" + shasum;
                        remember(
                            key,
                            {upstream_url, body.at("hashes").get<std::vector<std::string>>(), true,
                             "provider " + provider.to_string() + " " + version.to_string() + " " +
                                 route.os + "_" + route.arch});
                        archive_url = base_url_ + "archives/" + key + "/" + filename;
                    }
                    Route sums = route;
                    sums.host = route.host;
                    sums.kind = RouteKind::provider_shasums;
                    out = json_response(200, provider_package_wire(body, archive_url,
                                                                   base_url_ + route_path(sums)));
                    break;
                }
                const char* field = route.kind == RouteKind::provider_shasums
                                        ? "shasums_url"
                                        : "shasums_signature_url";
                const auto it = body.find(field);
                if (it == body.end())
                    throw Error(ErrorCode::not_found, provider.to_string() + " " +
                                                          version.to_string() + " publishes no " +
                                                          field);
                const std::string label = std::string(route.kind == RouteKind::provider_shasums
                                                          ? "the SHA256SUMS of "
                                                          : "the SHA256SUMS signature of ") +
                                          provider.to_string() + " " + version.to_string();
                const std::string url = it->get<std::string>();
                auto fetching = registry_.published_file(url, label);
                const registry::RegistryAnswer file = co_await std::move(fetching);
                out.content_type = route.kind == RouteKind::provider_shasums
                                       ? "text/plain; charset=utf-8"
                                       : "application/octet-stream";
                const auto& bytes = file.document->body.get_binary();
                out.body.assign(bytes.begin(), bytes.end());
                break;
            }
            default:
                throw Error(ErrorCode::internal, "unrouted request kind");
        }
    } catch (const cache::FetchFailure& e) {
        if (!e.cached()) snapshots_.save_failure(kept_key, e.what(), e.retry_in());
        throw;
    }
    snapshots_.forget_failure(kept_key);
    co_return out;
}

asio::awaitable<ListenerResponse> RegistryCache::archive_answer(const Route& route) {
    if (std::optional<archives::Archive> found = archives_.find(route.key)) {
        ListenerResponse out;
        out.content_type = "application/octet-stream";
        out.file = std::move(found);
        co_return out;
    }
    const auto it = pending_.find(route.key);
    if (it == pending_.end()) {
        throw Error(ErrorCode::not_found,
                    "this archive is not in hostkeeper's cache and no registry answer named it "
                    "(run init again)");
    }
    archives::ArchiveRequest request;
    request.key = route.key;
    request.url = it->second.url;
    request.published = it->second.published;
    request.verify = it->second.verify;
    request.what = it->second.what;
    const std::string upstream_url = request.url;
    ListenerResponse out;
    out.content_type = "application/octet-stream";
    try {
        auto getting = archives_.get(std::move(request));
        out.file = co_await std::move(getting);
    } catch (const archives::StoreUnwritable&) {
        // The store cannot take it (the store logs why, once): Terraform
        // fetches it from where the registry said, as it would without the
        // cache, and checks a provider package against the shasum of the
        // package document as it always does.
        out = pass_through(upstream_url);
    }
    co_return out;
}

asio::awaitable<ListenerResponse> RegistryCache::mirror_answer(const Route& route) {
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
        200, mirror_version(answer.document->body,
                            "provider " + provider.to_string() + " " + version.to_string()));
}

// Not a coroutine: it makes a lambda (async/toolchain.hpp, rule 3).
Json RegistryCache::mirror_version(const Json& body, const std::string& what) {
    return mirror_version_wire(body, [&](const std::string& platform, const Json& entry) {
        std::optional<std::string> served;
        const std::optional<std::string> sha = zh_sha256(entry.at("hashes"));
        const std::string& url = entry.at("url").get_ref<const std::string&>();
        const std::string filename = last_segment(url);
        if (!sha || !safe_filename(filename)) return served;
        const std::string key = "providers/" + *sha;
        remember(key, {url, entry.at("hashes").get<std::vector<std::string>>(), true,
                       what + " " + platform});
        served = base_url_ + "archives/" + key + "/" + filename;
        return served;
    });
}

}  // namespace hostkeeper::daemon::registry_cache
