#pragma once
// hostkeeper module versions|download and provider versions|package: the
// daemon's registry and mirror answers as tables for people, or as JSON for
// scripts. A module, provider, version or package the registry lacks, and a
// host that is no registry of that kind, exit 3.

#include <optional>
#include <string>

#include "helper/client/daemon_client.hpp"

namespace hostkeeper::helper::cli {

struct RegistryQuery {
    std::string address;     // module or provider address
    std::string version;     // download / package
    std::string constraint;  // versions: "" for every version
    std::string platform;    // package: "" for this machine's
    std::optional<std::string>
        mirror;  // provider: a mirror URL, "" for the registry; nullopt: the daemon's setting
    std::string output_dir;  // fetch: where the archive goes
    bool json = false;
    bool refresh = false;
};

int run_module_versions(const client::ClientOptions& client, const RegistryQuery& query);
int run_module_download(const client::ClientOptions& client, const RegistryQuery& query);
int run_provider_versions(const client::ClientOptions& client, const RegistryQuery& query);
int run_provider_package(const client::ClientOptions& client, const RegistryQuery& query);
// Downloads the package (through the daemon), verified against the zh:/h1:
// hashes its registry or mirror published, into query.output_dir.
int run_provider_fetch(const client::ClientOptions& client, const RegistryQuery& query);

}  // namespace hostkeeper::helper::cli
