// A fleet tier's address, and the repository and tag names made
// from outside names (the input after a NUL: a namespace, and a version).
// Every name made is one OCI accepts.
#include <string>

#include "daemon/fleet/fleet_address.hpp"
#include "fuzz_support.hpp"

using namespace hostkeeper;
using namespace hostkeeper::daemon::fleet;

namespace {

bool repository_name(const std::string& name) {
    if (name.empty() || name.size() > kMaxRepositoryName) return false;
    std::size_t start = 0;
    while (true) {
        const auto slash = name.find('/', start);
        if (!repository_component(std::string_view(name).substr(start, slash - start)))
            return false;
        if (slash == std::string::npos) return true;
        start = slash + 1;
    }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
    const auto [setting, rest] = fuzz::split_at_nul(fuzz::text_of(data, size));
    const auto [name, version] = fuzz::split_at_nul(rest);
    FleetAddress fleet{"oci.example", "fleet"};
    try {
        fleet = parse_fleet_address(setting);
        fuzz::require(fleet.origin().rfind("https://", 0) == 0, "an origin that is not https");
    } catch (const FleetAddressError&) {
    }
    try {
        fuzz::require(repository_name(provider_repository(fleet, "r.example:8443", name, "t")),
                      "a provider repository OCI would refuse");
        fuzz::require(repository_name(module_repository(fleet, "r.example", "n", name, name)),
                      "a module repository OCI would refuse");
    } catch (const FleetAddressError&) {
    }
    try {
        const std::string tag = version_tag(version);
        fuzz::require(!tag.empty() && tag.size() <= 128 && tag.find('+') == std::string::npos,
                      "a tag OCI would refuse");
    } catch (const FleetAddressError&) {
    }
    return 0;
}
