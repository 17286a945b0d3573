#pragma once
// Module and provider registry addresses, validated as Terraform's
// hashicorp/terraform-registry-address does, with errors that say which part
// is wrong.

#include <string>
#include <string_view>

namespace hostkeeper::proto {

inline constexpr std::string_view kDefaultRegistryHost = "registry.terraform.io";

struct ModuleAddress {
    std::string host;  // normalized as normalize_hostname() does
    std::string name_space;
    std::string name;
    std::string system;  // the "target system", e.g. "aws"

    // "host/namespace/name/system", always with the host.
    std::string to_string() const;
};

// [HOSTNAME/]NAMESPACE/NAME/SYSTEM, e.g. "hashicorp/consul/aws" or
// "tfe.example.com/acme/vpc/aws". NAMESPACE and NAME keep their case (the
// registry compares them case-insensitively but they are sent as given).
// Throws Error{bad_host} for the hostname (as normalize_hostname() does, and
// for a host without a dot or reserved for version control: github.com,
// bitbucket.org), Error{bad_request} for the rest.
ModuleAddress parse_module_address(std::string_view text);

struct ProviderAddress {
    std::string host;  // normalized as normalize_hostname() does
    std::string name_space;
    std::string type;

    // "host/namespace/type", always with the host.
    std::string to_string() const;
};

// [HOSTNAME/]NAMESPACE/TYPE, e.g. "hashicorp/aws". NAMESPACE and TYPE are
// folded to lowercase (ASCII only). Throws Error{bad_host} for the hostname,
// Error{bad_request} for the rest.
ProviderAddress parse_provider_address(std::string_view text);

// OS_ARCH as registries name platforms: "linux_amd64", "darwin_arm64",
// "windows_386"; each part [a-z0-9]+, one underscore.
bool is_platform(std::string_view text);
// `text` when it is a platform; else throws Error{bad_request} saying so.
std::string check_platform(std::string_view text);
// This machine's platform as Terraform and OpenTofu built for it name it
// ("linux_amd64").
std::string this_platform();

}  // namespace hostkeeper::proto
