#include "daemon/handlers/registry_requests.hpp"

#include <vector>

#include "daemon/handlers/replies.hpp"
#include "daemon/registry/registry_documents.hpp"
#include "proto/error.hpp"
#include "proto/registry_address.hpp"
#include "proto/semver.hpp"

namespace hostkeeper::daemon::handlers {
namespace asio = boost::asio;
using proto::Error;
using proto::ErrorCode;
using proto::Json;
using proto::Op;

namespace {

// "mirror": a URL, "" for the provider's own registry; absent: the configured mirror, if any.
std::optional<registry::Mirror> mirror_of(const registry::RegistryService& registry,
                                          const Json& request) {
    const std::string* url = text_field(request, "mirror", false);
    if (url == nullptr) return registry.default_mirror();
    if (url->empty()) return std::nullopt;
    return registry::make_mirror(*url);
}

// The versions answer, filtered by the request's constraint when it has one;
// the whole list as a prepared reply (reply::registry_versions).
server::Reply versions_reply(Json fields, const registry::RegistryAnswer& answer,
                             const std::optional<proto::VersionConstraints>& constraint,
                             bool pass_file) {
    if (!constraint) return reply::registry_versions(fields, answer, pass_file);
    fields["constraint"] = constraint->text();
    fields["total"] = answer.document->versions.size();
    Json body = answer.document->body;
    body["versions"] =
        registry::allowed_versions(answer.document->body, answer.document->versions, *constraint);
    return server::Reply{reply::registry(fields, answer, &body)};
}

// The name a fetched package is written under comes from the validated
// request, never from the publisher: Terraform's own
// terraform-provider-TYPE_VERSION_OS_ARCH.zip.
std::string local_package_name(const proto::ProviderAddress& provider, const proto::SemVer& version,
                               const std::string& platform) {
    return "terraform-provider-" + provider.type + "_" + version.to_string() + "_" + platform +
           ".zip";
}

// The package's fields, with where and how it was fetched: its local name (and
// the published one when they differ), path, size, computed hashes, verdict.
void describe_fetched(Json& package, const registry::FetchedPackage& fetched,
                      const std::string& local_name) {
    if (package.value("filename", "") != local_name) {
        package["published_filename"] = package.value("filename", "");
    }
    package["filename"] = local_name;
    package["path"] = fetched.path;
    package["size"] = fetched.size;
    package["computed"] = Json::array({fetched.zh, fetched.h1});
    package["verified"] = fetched.matched;
}

}  // namespace

asio::awaitable<server::Reply> RegistryRequests::handle(const Request& r) {
    const Op op = r.op;
    const Json& request = r.fields;
    registry::RegistryService& registry = registry_;
    Json head = Json::object();  // the request's own fields, as the reply repeats them
    const bool refresh = refresh_field(request);
    // Module and provider version lists may go by reference (PROTOCOL.md, Passed documents).
    const bool pass_file = flag_field(request, "document_fd");
    switch (op) {
        case Op::module_versions: {
            proto::ModuleAddress module =
                proto::parse_module_address(*text_field(request, "module", true));
            const auto constraint = constraint_field(request);
            head["module"] = module.to_string();
            const registry::RegistryAnswer answer =
                co_await registry.module_versions(std::move(module), refresh);
            co_return versions_reply(std::move(head), answer, constraint, pass_file);
        }
        case Op::module_download: {
            proto::ModuleAddress module =
                proto::parse_module_address(*text_field(request, "module", true));
            proto::SemVer version = proto::parse_semver(*text_field(request, "version", true));
            head["module"] = module.to_string();
            head["version"] = version.to_string();
            const registry::RegistryAnswer answer =
                co_await registry.module_download(std::move(module), version, refresh);
            co_return server::Reply{reply::registry(head, answer)};
        }
        case Op::provider_versions: {
            proto::ProviderAddress provider =
                proto::parse_provider_address(*text_field(request, "provider", true));
            const auto constraint = constraint_field(request);
            std::optional<registry::Mirror> mirror = mirror_of(registry, request);
            head["provider"] = provider.to_string();
            if (mirror) head["mirror"] = mirror->base;
            const registry::RegistryAnswer answer =
                co_await registry.provider_versions(std::move(provider), mirror, refresh);
            co_return versions_reply(std::move(head), answer, constraint, pass_file);
        }
        case Op::provider_package:
        case Op::provider_fetch: {
            proto::ProviderAddress provider =
                proto::parse_provider_address(*text_field(request, "provider", true));
            proto::SemVer version = proto::parse_semver(*text_field(request, "version", true));
            std::string platform = *text_field(request, "platform", true);
            std::optional<registry::Mirror> mirror = mirror_of(registry, request);
            head["provider"] = provider.to_string();
            head["version"] = version.to_string();
            if (mirror) head["mirror"] = mirror->base;
            const std::string what =
                provider.to_string() + " " + version.to_string() + " for " + platform;
            const std::string local_name = local_package_name(provider, version, platform);
            const registry::RegistryAnswer answer = co_await registry.provider_package(
                std::move(provider), version, platform, mirror, refresh);
            if (op == Op::provider_package && !mirror)
                co_return server::Reply{reply::registry(head, answer)};
            Json package = mirror ? registry::mirror_package(*answer.document, platform,
                                                             "the mirror's " + what)
                                  : answer.document->body;
            if (op == Op::provider_package)
                co_return server::Reply{reply::registry(head, answer, &package)};
            // Named first.
            std::string download_url = package.at("download_url").get<std::string>();
            std::vector<std::string> hashes = package.at("hashes").get<std::vector<std::string>>();
            auto fetching =
                registry.fetch_package(std::move(download_url), std::move(hashes), what);
            const registry::FetchedPackage fetched = co_await std::move(fetching);
            describe_fetched(package, fetched, local_name);
            co_return server::Reply{reply::registry(head, answer, &package)};
        }
        default:
            break;
    }
    throw Error(ErrorCode::internal, "not a registry op");
}

}  // namespace hostkeeper::daemon::handlers
