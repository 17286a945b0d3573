#include "daemon/registry/registry_service.hpp"

#include <exception>
#include <variant>

#include "daemon/discovery/discovery_document.hpp"
#include "daemon/http/url.hpp"
#include "daemon/registry/registry_documents.hpp"
#include "proto/json.hpp"
#include "proto/services.hpp"

namespace hostkeeper::daemon::registry {
namespace asio = boost::asio;
using proto::Error;
using proto::ErrorCode;
using proto::Json;
using std::chrono::seconds;

namespace {

// A path below a base URL; "./" so that a "host:port" segment is never read as a scheme.
std::string below(const std::string& base, const std::string& path) {
    return http::resolve_url(base, "./" + path);
}

// What a 404 leaves: no document at `url`.
RegistryDocument no_document(const std::string& url) {
    return RegistryDocument(url, Json::object());
}

std::string last_segment(const std::string& url) {
    const auto query = url.find_first_of("?#");
    const std::string path = url.substr(0, query);
    const auto slash = path.rfind('/');
    return slash == std::string::npos ? path : path.substr(slash + 1);
}

}  // namespace

std::string registry_origin(const std::string& host) {
    return "https://" + host + "/";
}

Json mirror_package(const RegistryDocument& document, const std::string& platform,
                    const std::string& what) {
    const Json& archives = document.body.at("archives");
    const auto it = archives.find(platform);
    if (it == archives.end()) {
        std::string has;
        for (const auto& [name, archive] : archives.items())
            has += (has.empty() ? "" : ", ") + name;
        throw Error(ErrorCode::not_found, what + " has no " + platform + " package (" +
                                              (has.empty() ? "it lists none" : "it has " + has) +
                                              ")");
    }
    const std::string& url = it->at("url").get_ref<const std::string&>();
    return {{"platform", platform},
            {"filename", last_segment(url)},
            {"download_url", url},
            {"hashes", it->at("hashes")}};
}

RegistryService::RegistryService(asio::any_io_executor io, http::HttpClient& http,
                                 credentials::TokenLifecycle& credentials,
                                 discovery::DiscoveryService& discovery, RegistryOptions options,
                                 Cache::Clock clock)
    : discovery_(discovery),
      options_(std::move(options)),
      clock_(std::move(clock)),
      cache_(std::move(io), clock_, upstream::answer_cache_options(options_), "fetching"),
      upstream_(http, credentials),
      fetcher_(http, options_.downloads_dir, options_.fetch_timeout) {
    if (!options_.mirror_url.empty()) default_mirror_ = make_mirror(options_.mirror_url);
}

asio::awaitable<FetchedPackage> RegistryService::fetch_package(std::string url,
                                                               std::vector<std::string> published,
                                                               std::string what) {
    if (options_.downloads_dir.empty())
        throw Error(ErrorCode::internal, "no downloads directory is configured");
    co_return co_await fetcher_.fetch(std::move(url), std::move(published), std::move(what));
}

asio::awaitable<std::string> RegistryService::service_url(std::string host, std::string service) {
    const discovery::DiscoveryAnswer discovered = co_await discovery_.discover(host, false);
    const discovery::Services& services = discovered.services();
    if (const auto it = services.services.find(service);
        it != services.services.end() && it->is_string()) {
        co_return it->get<std::string>();
    }
    if (const auto it = services.invalid.find(service); it != services.invalid.end()) {
        throw Error(
            ErrorCode::unsupported_service,
            host + " offers " + service + ", but it cannot be used: " + it->get<std::string>());
    }
    const std::vector<std::string> others = proto::other_versions(services.services, service);
    if (others.empty()) {
        throw Error(
            ErrorCode::unsupported_service,
            host + " does not provide " + service + " (" +
                (discovered.document->services.services.empty() ? "it offers no services"
                                                                : "not in " + discovered.url()) +
                "): it is not a registry of that kind");
    }
    std::string list;
    for (const std::string& other : others) list += (list.empty() ? "" : ", ") + other;
    throw Error(ErrorCode::unsupported_service,
                host + " does not support " + service + "; it offers " + list);
}

// A registry's document: `path` below the URL its discovery document gives
// for `service`, found when the document is fetched (a cached answer needs no
// discovery, no URL). The cache key names the document without its URL.
RegistryService::Job RegistryService::registry_job(Kind kind, const std::string& host,
                                                   const std::string& service,
                                                   const std::string& path) const {
    Job job;
    job.kind = kind;
    job.address_host = host;
    job.token_host = host;
    job.token_origin = registry_origin(host);
    job.service = service;
    job.path = path;
    job.key = host + " " + host + " " + service + " " + path;
    return job;
}

// A mirror's document: `path` below its base URL.
RegistryService::Job RegistryService::mirror_job(Kind kind, const Mirror& mirror,
                                                 const std::string& address_host,
                                                 const std::string& path) const {
    Job job;
    job.kind = kind;
    job.url = below(mirror.base, path);
    job.address_host = address_host;
    job.token_host = mirror.host;
    job.token_origin = mirror.base;
    job.key = address_host + " " + mirror.host + " " + job.url;
    return job;
}

// Jobs (and their lambdas) are made outside the coroutines (GCC bug 109224).
RegistryService::Job RegistryService::module_versions_job(
    const proto::ModuleAddress& module) const {
    const std::string path = module.name_space + "/" + module.name + "/" + module.system;
    Job job = registry_job(Kind::versions, module.host, "modules.v1", path + "/versions");
    job.label = "the versions of module " + module.to_string();
    job.not_found = module.host + " has no module " + path;
    job.parse = [](const http::HttpResponse& r, const std::string&) {
        VersionList list = parse_module_versions(r.body);
        return RegistryDocument(r.url, std::move(list.body), std::move(list.versions));
    };
    return job;
}

RegistryService::Job RegistryService::module_download_job(const proto::ModuleAddress& module,
                                                          const proto::SemVer& version) const {
    const std::string path = module.name_space + "/" + module.name + "/" + module.system;
    Job job = registry_job(Kind::module_download, module.host, "modules.v1",
                           path + "/" + version.to_string() + "/download");
    job.label = "the download location of module " + module.to_string() + " " + version.to_string();
    job.not_found = module.host + " has no version " + version.to_string() + " of module " + path;
    job.parse = [](const http::HttpResponse& r, const std::string& endpoint) {
        // As Terraform: a 204 gives X-Terraform-Get; a 200 must have a JSON
        // object body whose "location" comes first, the header second.
        std::string location;
        if (r.status == 200) {
            Json body;
            try {
                body = proto::parse_json(r.body);
            } catch (const proto::JsonError&) {
                body = nullptr;  // not JSON: refused below, as Terraform refuses it
            }
            if (!body.is_object()) {
                throw std::runtime_error(
                    "a 200 response's body must be a JSON object (with the \"location\" of the "
                    "module)");
            }
            if (const auto it = body.find("location"); it != body.end() && it->is_string())
                location = it->get<std::string>();
        }
        if (location.empty()) location = r.terraform_get;
        if (location.empty()) {
            throw std::runtime_error("HTTP status " + std::to_string(r.status) +
                                     " without an X-Terraform-Get header, which must give the "
                                     "module's download location");
        }
        // Relative forms resolve against the endpoint's URL, not a redirect's.
        return RegistryDocument(endpoint,
                                Json{{"location", resolve_module_location(location, endpoint)}});
    };
    return job;
}

RegistryService::Job RegistryService::provider_versions_job(
    const proto::ProviderAddress& provider, const std::optional<Mirror>& mirror) const {
    const std::string path = provider.name_space + "/" + provider.type;
    Job job;
    if (mirror) {
        job = mirror_job(Kind::versions, *mirror, provider.host,
                         provider.host + "/" + path + "/index.json");
        job.not_found = "the mirror " + mirror->base + " does not carry " + provider.to_string();
        job.parse = [](const http::HttpResponse& r, const std::string&) {
            VersionList list = parse_mirror_index(r.body);
            return RegistryDocument(r.url, std::move(list.body), std::move(list.versions));
        };
    } else {
        job = registry_job(Kind::versions, provider.host, "providers.v1", path + "/versions");
        job.not_found = provider.host + " has no provider " + path;
        job.parse = [](const http::HttpResponse& r, const std::string&) {
            VersionList list = parse_provider_versions(r.body);
            return RegistryDocument(r.url, std::move(list.body), std::move(list.versions));
        };
    }
    job.label = "the versions of provider " + provider.to_string();
    return job;
}

RegistryService::Job RegistryService::provider_package_job(
    const proto::ProviderAddress& provider, const proto::SemVer& version,
    const std::string& platform, const std::optional<Mirror>& mirror) const {
    const std::string path = provider.name_space + "/" + provider.type;
    const std::string v = version.to_string();
    Job job;
    if (mirror) {
        job = mirror_job(Kind::download, *mirror, provider.host,
                         provider.host + "/" + path + "/" + v + ".json");
        job.not_found =
            "the mirror " + mirror->base + " has no version " + v + " of " + provider.to_string();
        job.parse = [](const http::HttpResponse& r, const std::string&) {
            return RegistryDocument(r.url, parse_mirror_version(r.body, r.url));
        };
    } else {
        const auto underscore = platform.find('_');
        const std::string os = platform.substr(0, underscore);
        const std::string arch = platform.substr(underscore + 1);
        job = registry_job(Kind::download, provider.host, "providers.v1",
                           path + "/" + v + "/download/" + os + "/" + arch);
        job.not_found =
            provider.host + " has no " + platform + " package of provider " + path + " " + v;
        job.parse = [platform](const http::HttpResponse& r, const std::string&) {
            Json package = parse_provider_package(r.body, r.url);
            // As Terraform: a package for another platform is an error.
            if (package.at("platform") != platform) {
                throw std::runtime_error("the registry answered with a package for " +
                                         package.at("platform").get<std::string>() + ", not " +
                                         platform);
            }
            return RegistryDocument(r.url, std::move(package));
        };
    }
    job.label = "provider " + provider.to_string() + " " + v + (mirror ? "" : " for " + platform);
    return job;
}

asio::awaitable<RegistryAnswer> RegistryService::module_versions(proto::ModuleAddress module,
                                                                 bool refresh) {
    // Named first.
    auto answering = get(module_versions_job(module), refresh);
    co_return co_await std::move(answering);
}

asio::awaitable<RegistryAnswer> RegistryService::module_download(proto::ModuleAddress module,
                                                                 proto::SemVer version,
                                                                 bool refresh) {
    // Named first.
    auto answering = get(module_download_job(module, version), refresh);
    co_return co_await std::move(answering);
}

asio::awaitable<RegistryAnswer> RegistryService::provider_versions(proto::ProviderAddress provider,
                                                                   std::optional<Mirror> mirror,
                                                                   bool refresh) {
    // Named first.
    auto answering = get(provider_versions_job(provider, mirror), refresh);
    co_return co_await std::move(answering);
}

asio::awaitable<RegistryAnswer> RegistryService::provider_package(proto::ProviderAddress provider,
                                                                  proto::SemVer version,
                                                                  std::string platform,
                                                                  std::optional<Mirror> mirror,
                                                                  bool refresh) {
    proto::check_platform(platform);
    // Named first.
    auto answering = get(provider_package_job(provider, version, platform, mirror), refresh);
    co_return co_await std::move(answering);
}

asio::awaitable<RegistryAnswer> RegistryService::published_file(std::string url, std::string label,
                                                                std::string host) {
    Job job;
    job.kind = Kind::file;
    job.url = url;
    job.address_host = host;
    job.token_host = host;
    job.token_origin = registry_origin(host);
    job.key = host + " " + host + " file " + url;
    job.label = label;
    job.not_found = label + " does not exist";
    job.parse = [](const http::HttpResponse& r, const std::string&) {
        Json bytes = Json::binary(Json::binary_t::container_type(r.body.begin(), r.body.end()));
        return RegistryDocument(r.url, std::move(bytes));
    };
    // Named first.
    auto answering = get(std::move(job), false);
    co_return co_await std::move(answering);
}

asio::awaitable<RegistryAnswer> RegistryService::get(Job job, bool refresh) {
    const std::string key = job.key;
    const std::string label = job.label;
    const std::string not_found = job.not_found;
    // Named first.
    auto lookup =
        cache_.get(key, refresh, fetcher(std::make_shared<const Job>(std::move(job))), label);
    const Cache::Result result = co_await std::move(lookup);
    if (const auto* failed = std::get_if<Cache::Failed>(&result)) {
        throw RegistryError(failed->message, failed->cached, failed->retry_in);
    }
    const auto& found = std::get<Cache::Answer>(result);
    if (found.empty)
        throw Error(ErrorCode::not_found,
                    not_found + " (HTTP status 404 from " + found.document->url + ")");
    RegistryAnswer answer;
    answer.source = found.source;
    answer.document = found.document;
    answer.age = found.age;
    answer.expires_in = found.expires_in;
    answer.error = found.error;
    co_return answer;
}

RegistryService::Cache::Fetch RegistryService::fetcher(const std::shared_ptr<const Job>& job) {
    return [this, job] { return fetch(job); };
}

asio::awaitable<RegistryService::Cache::Fetched> RegistryService::fetch(
    std::shared_ptr<const Job> job) {
    std::string url = job->url;
    std::string failed;
    if (url.empty()) {
        // Discovery failing is this document failing: its last good answer
        // may stand in (stale-if-error) while the host is down.
        try {
            std::string base = co_await service_url(job->address_host, job->service);
            // Terraform's module registry client adds the slash a modules.v1
            // URL lacks (its provider registry client does not).
            if (job->service == "modules.v1" && base.find_first_of("?#") == std::string::npos &&
                base.back() != '/') {
                base += '/';
            }
            url = below(base, job->path);
        } catch (const discovery::DiscoveryError& e) {
            failed = std::string("discovery: ") + e.what();
        }
    }
    // No std::move in the co_return: clang-analyzer 14 sees the expression of
    // a coroutine's co_return evaluated twice (a false use after move).
    if (!failed.empty()) co_return settle(*job, upstream_.failed(failed));
    // In a coroutine of its own: awaited here, after the try block above,
    // it would trip GCC bug 109224.
    auto fetching = fetch_from(std::move(job), std::move(url));
    co_return co_await std::move(fetching);
}

asio::awaitable<RegistryService::Cache::Fetched> RegistryService::fetch_from(
    std::shared_ptr<const Job> job, std::string url) {
    // Named first.
    auto fetching = upstream_.fetch(request_of(*job, url));
    upstream::Verdict verdict = co_await std::move(fetching);
    co_return settle(*job, std::move(verdict));
}

upstream::UpstreamRequest RegistryService::request_of(const Job& job,
                                                      const std::string& url) const {
    upstream::UpstreamRequest request;
    request.url = url;
    request.token_host = job.token_host;
    request.token_origin = job.token_origin;
    request.purpose = job.label;
    request.rules.max_body = kMaxRegistryDocument;
    request.rules.max_redirects = kMaxRegistryRedirects;
    request.rules.timeout = options_.timeout;
    // Terraform's mirror client insists on application/json; its registry
    // clients read any body as JSON, and so does this.
    request.json_media_type = job.service.empty() && job.kind != Kind::file;
    request.accept_204 = job.kind == Kind::module_download;
    request.explain_refusal = true;
    return request;
}

RegistryService::Cache::Fetched RegistryService::settle(const Job& job, upstream::Verdict verdict) {
    // The server may shorten how long its answer stays fresh, never lengthen it.
    const seconds ttl = job.kind == Kind::versions ? options_.versions_ttl : options_.download_ttl;
    const upstream::Freshness fresh{ttl, seconds(0), ttl, options_.negative_ttl};
    return upstream_.settle<RegistryDocument>(std::move(verdict), fresh, clock_(), job.parse,
                                              no_document);
}

std::size_t RegistryService::flush() {
    return cache_.flush();
}

std::size_t RegistryService::flush(const std::string& host) {
    const std::string address = host + " ";
    const std::string token = " " + host + " ";
    return cache_.flush_if([&](const std::string& key) {
        return key.rfind(address, 0) == 0 || key.find(token) == key.find(' ');
    });
}

RegistryStats RegistryService::stats() const {
    return upstream_.stats(cache_.stats());
}

void RegistryService::stop() {
    cache_.stop();
}

}  // namespace hostkeeper::daemon::registry
