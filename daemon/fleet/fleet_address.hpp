#pragma once
// Where a fleet tier lives and how its repositories are named: its address
// ("oci://HOST[:PORT]/PREFIX", an OCI Distribution registry), and the
// repository and tag that hold a provider
// package or a module archive of one registry host. Pure.
//
// Repositories follow the layouts OpenTofu reads (its oci_mirror provider
// installation and its oci: module sources), under PREFIX and the registry
// host, so that two registries' namespaces never meet:
//   PREFIX/providers/HOST/NAMESPACE/TYPE           tags VERSION (an index)
//                                                  and VERSION_OS_ARCH
//   PREFIX/modules/HOST/NAMESPACE/NAME/SYSTEM      tag VERSION
// HOST is the normalized registry hostname with a port as "__PORT" (a
// hostname never holds "_"). A name part that is not a repository
// component once lowercased (OCI's `[a-z0-9]+((\.|_|__|-+)[a-z0-9]+)*`) is
// written "x" and the hex of its bytes. The mapping may join two spellings
// of a module address; what is read back is still checked (a provider
// package against its signed digest, a module archive against the
// download location it was stored for), so a shared name is a miss, never
// the wrong archive. A version's "+" is "_" in a tag, as OpenTofu reads it.

#include <cstdint>
#include <stdexcept>
#include <string>
#include <string_view>

namespace hostkeeper::daemon::fleet {

// A fleet setting, or a name, that cannot be used: the message says why.
class FleetAddressError : public std::runtime_error {
  public:
    using std::runtime_error::runtime_error;
};

struct FleetAddress {
    std::string host;    // normalized; with ":PORT" when it is not 443
    std::string prefix;  // repository path prefix, without slashes at its ends

    // "https://HOST[:PORT]": the registry's API is at ORIGIN/v2/.
    std::string origin() const { return "https://" + host; }
    // The setting's own spelling, for messages.
    std::string text() const { return "oci://" + host + "/" + prefix; }
};

// "oci://registry.example.com/team/terraform" -> {registry.example.com,
// team/terraform}. The prefix must be one or more repository components.
// Throws FleetAddressError.
FleetAddress parse_fleet_address(std::string_view text);

// The longest repository name this client writes: what OCI registries
// commonly accept (distribution's limit).
inline constexpr std::size_t kMaxRepositoryName = 255;

// The repositories of a provider (registry host, namespace, type) and of a
// module (registry host, namespace, name, system). Throws
// FleetAddressError for a name that would be longer than
// kMaxRepositoryName, or a registry host that is not normalized.
std::string provider_repository(const FleetAddress& fleet, std::string_view registry_host,
                                std::string_view namespace_, std::string_view type);
std::string module_repository(const FleetAddress& fleet, std::string_view registry_host,
                              std::string_view namespace_, std::string_view name,
                              std::string_view system);

// A version's tag ("1.2.0+ent.1" -> "1.2.0_ent.1"); with an os and an
// architecture, the tag of that platform's manifest ("1.2.0_linux_amd64").
// Throws FleetAddressError for a version that cannot be a tag (empty, over
// 128 characters, or holding a character a tag may not).
std::string version_tag(std::string_view version);
std::string platform_tag(std::string_view version, std::string_view os, std::string_view arch);

// Whether `text` is one OCI repository path component.
bool repository_component(std::string_view text);

}  // namespace hostkeeper::daemon::fleet
