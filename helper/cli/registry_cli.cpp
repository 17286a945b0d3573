#include "helper/cli/registry_cli.hpp"

#include <cstdio>
#include <filesystem>
#include <string>
#include <vector>

#include "helper/cli/answer_source.hpp"
#include "helper/cli/command.hpp"
#include "helper/client/common_cli.hpp"
#include "helper/client/exit_codes.hpp"
#include "helper/client/printable_output.hpp"
#include "proto/error.hpp"
#include "proto/file_io.hpp"
#include "proto/messages.hpp"
#include "proto/registry_address.hpp"
#include "proto/semver.hpp"

namespace hostkeeper::helper::cli {
namespace {
using proto::Json;

std::string joined(const Json& array, const char* separator) {
    std::string out;
    for (const Json& item : array) {
        if (!out.empty()) out += separator;
        out += item.is_string() ? item.get<std::string>() : item.dump();
    }
    return out;
}

void warn_if_stale(const Json& response) {
    if (response.value("source", "") == "stale") {
        client::print_printable(
            stderr, "hostkeeper: warning: this answer is stale; refreshing it failed: %s\n",
            response.value("error", "?").c_str());
    }
}

Json call(const client::ClientOptions& client, const Json& request) {
    client::DaemonClient daemon(client);
    return daemon.call(request);
}

int print_json(const Json& response) {
    client::print_printable(stdout, "%s\n", response.dump(2).c_str());
    return client::kExitOk;
}

void add_common(Json& request, const RegistryQuery& query) {
    if (query.refresh) request["refresh"] = true;
    // A long versions list may come by reference (PROTOCOL.md, Passed
    // documents); the connection puts it in place.
    if (request["op"] == "module_versions" || request["op"] == "provider_versions")
        request["document_fd"] = true;
    if (!query.constraint.empty()) {
        proto::VersionConstraints::parse(
            query.constraint);  // a bad constraint is reported before any request
        request["constraint"] = query.constraint;
    }
    if (query.mirror) request["mirror"] = *query.mirror;
}

std::string versions_heading(const Json& response, const std::string& address) {
    const std::size_t shown = response.at("versions").size();
    std::string text =
        address + ": " + std::to_string(shown) + " version" + (shown == 1 ? "" : "s");
    if (response.contains("constraint")) {
        text += " matching \"" + response.value("constraint", "") + "\" (of " +
                std::to_string(response.value("total", 0LL)) + ")";
    }
    if (response.contains("mirror")) text += " in the mirror " + response.value("mirror", "");
    return text + " (" + source_text(response) + ")";
}

}  // namespace

int run_module_versions(const client::ClientOptions& client, const RegistryQuery& query) {
    const proto::ModuleAddress module = proto::parse_module_address(query.address);
    Json request = proto::make_request(proto::Op::module_versions);
    request["module"] = module.to_string();
    add_common(request, query);
    const Json response = call(client, request);
    if (query.json) return print_json(response);
    warn_if_stale(response);
    client::print_printable(stdout, "%s\n",
                            versions_heading(response, response.value("module", "?")).c_str());
    for (const Json& entry : response.at("versions"))
        client::print_printable(stdout, "%s\n", entry.value("version", "?").c_str());
    if (response.contains("invalid")) {
        client::print_printable(stdout, "ignored (not semantic versions): %s\n",
                                joined(response.at("invalid"), ", ").c_str());
    }
    return client::kExitOk;
}

int run_module_download(const client::ClientOptions& client, const RegistryQuery& query) {
    const proto::ModuleAddress module = proto::parse_module_address(query.address);
    const proto::SemVer version = proto::parse_semver(query.version);
    Json request = proto::make_request(proto::Op::module_download);
    request["module"] = module.to_string();
    request["version"] = version.to_string();
    add_common(request, query);
    const Json response = call(client, request);
    if (query.json) return print_json(response);
    warn_if_stale(response);
    client::print_printable(stdout, "%s\n", response.value("location", "?").c_str());
    return client::kExitOk;
}

int run_provider_versions(const client::ClientOptions& client, const RegistryQuery& query) {
    const proto::ProviderAddress provider = proto::parse_provider_address(query.address);
    Json request = proto::make_request(proto::Op::provider_versions);
    request["provider"] = provider.to_string();
    add_common(request, query);
    const Json response = call(client, request);
    if (query.json) return print_json(response);
    warn_if_stale(response);
    client::print_printable(stdout, "%s\n",
                            versions_heading(response, response.value("provider", "?")).c_str());
    const Json& versions = response.at("versions");
    const bool mirror = response.contains("mirror");  // a mirror's index lists versions only
    if (!versions.empty())
        client::print_printable(stdout, mirror ? "VERSION\n" : "%-20s %-10s %s\n", "VERSION",
                                "PROTOCOLS", "PLATFORMS");
    for (const Json& entry : versions) {
        if (mirror) {
            client::print_printable(stdout, "%s\n", entry.value("version", "?").c_str());
        } else {
            client::print_printable(stdout, "%-20s %-10s %s\n", entry.value("version", "?").c_str(),
                                    joined(entry.value("protocols", Json::array()), ",").c_str(),
                                    joined(entry.value("platforms", Json::array()), " ").c_str());
        }
    }
    if (response.contains("warnings"))
        client::print_printable(stdout, "registry warnings: %s\n",
                                joined(response.at("warnings"), "; ").c_str());
    if (response.contains("invalid")) {
        client::print_printable(stdout, "ignored (not semantic versions): %s\n",
                                joined(response.at("invalid"), ", ").c_str());
    }
    return client::kExitOk;
}

namespace {

// A provider_package or provider_fetch request for `query`.
Json package_request(proto::Op op, const RegistryQuery& query) {
    const proto::ProviderAddress provider = proto::parse_provider_address(query.address);
    const proto::SemVer version = proto::parse_semver(query.version);
    const std::string platform =
        proto::check_platform(query.platform.empty() ? proto::this_platform() : query.platform);
    Json request = proto::make_request(op);
    request["provider"] = provider.to_string();
    request["version"] = version.to_string();
    request["platform"] = platform;
    add_common(request, query);
    return request;
}

}  // namespace

int run_provider_fetch(const client::ClientOptions& client, const RegistryQuery& query) {
    const std::filesystem::path dir = query.output_dir.empty()
                                          ? std::filesystem::path(".")
                                          : std::filesystem::path(query.output_dir);
    std::error_code ec;
    if (!std::filesystem::is_directory(dir, ec)) {
        throw proto::Error(proto::ErrorCode::bad_request, dir.string() + " is not a directory");
    }
    const Json request = package_request(proto::Op::provider_fetch, query);
    const Json response = call(client, request);
    const std::string downloaded = response.value("path", "");
    const std::filesystem::path target = dir / response.value("filename", "");
    // The daemon left the verified archive in its private directory: copy it
    // into place (whole or not at all), then remove the daemon's copy.
    try {
        proto::copy_file_atomically(downloaded, target, 0644);
    } catch (...) {
        std::filesystem::remove(downloaded, ec);
        throw;
    }
    std::filesystem::remove(downloaded, ec);
    if (query.json) {
        Json out = response;
        out.erase("path");
        out["written"] = target.string();
        return print_json(out);
    }
    warn_if_stale(response);
    client::print_printable(stdout, "verified %s: as %s published\n",
                            joined(response.value("verified", Json::array()), " and ").c_str(),
                            response.contains("mirror") ? "the mirror" : "the registry");
    client::print_printable(stdout, "wrote %s (%lld bytes)\n", target.string().c_str(),
                            response.value("size", 0LL));
    return client::kExitOk;
}

int run_provider_package(const client::ClientOptions& client, const RegistryQuery& query) {
    const std::string platform = query.platform.empty() ? proto::this_platform() : query.platform;
    const Json response = call(client, package_request(proto::Op::provider_package, query));
    if (query.json) return print_json(response);
    warn_if_stale(response);
    const auto row = [](const char* name, const std::string& value) {
        client::print_printable(stdout, "%-22s %s\n", name, value.c_str());
    };
    row("provider", response.value("provider", "?"));
    row("version", response.value("version", "?"));
    row("platform", response.value("platform", platform));
    if (response.contains("mirror")) row("mirror", response.value("mirror", ""));
    row("filename", response.value("filename", "?"));
    row("download_url", response.value("download_url", "?"));
    for (const char* name : {"shasums_url", "shasums_signature_url", "shasum"}) {
        if (response.contains(name)) row(name, response.value(name, ""));
    }
    row("hashes", joined(response.value("hashes", Json::array()), " "));
    if (response.contains("protocols")) row("protocols", joined(response.at("protocols"), ","));
    if (const auto keys = response.find("signing_keys");
        keys != response.end() && keys->contains("gpg_public_keys")) {
        std::vector<std::string> ids;
        for (const Json& key : keys->at("gpg_public_keys")) ids.push_back(key.value("key_id", "?"));
        std::string list;
        for (const std::string& id : ids) list += (list.empty() ? "" : " ") + id;
        row("signing_keys", list);
    }
    row("answer", source_text(response));
    return client::kExitOk;
}

namespace {

// --json and --refresh, as the registry's questions take them.
void add_query_flags(CLI::App* cmd, RegistryQuery& query) {
    cmd->add_flag("--json", query.json, "print the daemon's answer as JSON");
    cmd->add_flag("--refresh", query.refresh, "skip the cache and fetch the document now");
}

class ModuleCommand final : public Command {
  public:
    CLI::App* add_to(CLI::App& app) override {
        auto* cmd = app.add_subcommand(
            "module", "a module registry's versions and download locations (modules.v1)");
        cmd->require_subcommand(1);
        versions_ = cmd->add_subcommand("versions", "the versions of a module, newest first");
        versions_
            ->add_option("address", query_.address,
                         "[HOSTNAME/]NAMESPACE/NAME/SYSTEM, e.g. hashicorp/consul/aws")
            ->required();
        versions_->add_option("--constraint", query_.constraint,
                              "only versions matching, e.g. \"~> 1.2, != 1.2.5\"");
        add_query_flags(versions_, query_);
        download_ = cmd->add_subcommand(
            "download", "where a module version is downloaded from (X-Terraform-Get)");
        download_->add_option("address", query_.address, "[HOSTNAME/]NAMESPACE/NAME/SYSTEM")
            ->required();
        download_->add_option("version", query_.version, "the version, e.g. 1.2.0")->required();
        add_query_flags(download_, query_);
        return cmd;
    }
    int run(const client::ClientOptions& client) override {
        if (versions_->parsed()) return run_module_versions(client, query_);
        if (download_->parsed()) return run_module_download(client, query_);
        return client::kExitUsage;
    }

  private:
    RegistryQuery query_;
    CLI::App* versions_ = nullptr;
    CLI::App* download_ = nullptr;
};

class ProviderCommand final : public Command {
  public:
    CLI::App* add_to(CLI::App& app) override {
        auto* cmd = app.add_subcommand(
            "provider", "a provider registry's or network mirror's versions and packages");
        cmd->require_subcommand(1);
        add_versions(*cmd);
        add_package(*cmd);
        add_fetch(*cmd);
        return cmd;
    }
    // A download takes longer than a question: longer than the daemon's
    // default fetch_timeout (10 min) plus discovery, unless --timeout says.
    std::optional<std::chrono::milliseconds> default_timeout() const override {
        if (fetch_->parsed()) return std::chrono::minutes(15);
        return std::nullopt;
    }
    int run(const client::ClientOptions& client) override {
        if (direct_) query_.mirror = "";
        if (!mirror_.empty()) query_.mirror = mirror_;
        if (versions_->parsed()) return run_provider_versions(client, query_);
        if (package_->parsed()) return run_provider_package(client, query_);
        if (fetch_->parsed()) return run_provider_fetch(client, query_);
        return client::kExitUsage;
    }

  private:
    void add_mirror_flags(CLI::App* cmd) {
        auto* mirror =
            cmd->add_option("--mirror", mirror_,
                            "ask this provider network mirror (https URL) instead of the registry");
        cmd->add_flag("--direct", direct_,
                      "ask the provider's registry even if the daemon has a mirror_url")
            ->excludes(mirror);
    }
    void add_platform(CLI::App* cmd) {
        cmd->add_option("--platform", query_.platform,
                        "OS_ARCH (default: this machine's, " + proto::this_platform() + ")");
    }
    void add_versions(CLI::App& cmd) {
        versions_ = cmd.add_subcommand(
            "versions", "the versions of a provider, newest first, with protocols and platforms");
        versions_
            ->add_option("address", query_.address,
                         "[HOSTNAME/]NAMESPACE/TYPE, e.g. hashicorp/random")
            ->required();
        versions_->add_option("--constraint", query_.constraint,
                              "only versions matching, e.g. \">= 2.0, < 4.0\"");
        add_query_flags(versions_, query_);
        add_mirror_flags(versions_);
    }
    void add_package(CLI::App& cmd) {
        package_ = cmd.add_subcommand("package",
                                      "the package of a provider version for a platform: URL, "
                                      "filename, hashes, signing keys");
        package_->add_option("address", query_.address, "[HOSTNAME/]NAMESPACE/TYPE")->required();
        package_->add_option("version", query_.version, "the version, e.g. 3.6.0")->required();
        add_platform(package_);
        add_query_flags(package_, query_);
        add_mirror_flags(package_);
    }
    void add_fetch(CLI::App& cmd) {
        fetch_ = cmd.add_subcommand("fetch",
                                    "download a provider package and check it against the "
                                    "zh:/h1: hashes its registry or mirror published");
        fetch_->add_option("address", query_.address, "[HOSTNAME/]NAMESPACE/TYPE")->required();
        fetch_->add_option("version", query_.version, "the version, e.g. 3.6.0")->required();
        add_platform(fetch_);
        fetch_->add_option("-o,--output", query_.output_dir,
                           "write the archive into this directory (default: .)");
        fetch_->add_flag("--json", query_.json, "print the daemon's answer as JSON");
        fetch_->add_flag("--refresh", query_.refresh, "skip the cache for the package's metadata");
        add_mirror_flags(fetch_);
    }

    RegistryQuery query_;
    std::string mirror_;
    bool direct_ = false;
    CLI::App* versions_ = nullptr;
    CLI::App* package_ = nullptr;
    CLI::App* fetch_ = nullptr;
};

}  // namespace

std::unique_ptr<Command> module_command() {
    return std::make_unique<ModuleCommand>();
}
std::unique_ptr<Command> provider_command() {
    return std::make_unique<ProviderCommand>();
}

}  // namespace hostkeeper::helper::cli
