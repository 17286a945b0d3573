#pragma once
// Service ids of remote service discovery ("modules.v1"), as both ends of
// the socket judge them.

#include <string>
#include <string_view>
#include <vector>

#include "proto/messages.hpp"

namespace hostkeeper::proto {

// "NAME.vN" or "NAME.vN.M" (tfe.v2.1): a name of letters, digits, '-' and
// '_', then ".v" and a version of dot-separated numbers, as Terraform parses them.
bool is_service_id(std::string_view id);

// The other versions of `id`'s service among the keys of `services`, e.g.
// for "modules.v2" -> ["modules.v1"]: Terraform's "version not supported"
// rather than "service not provided".
std::vector<std::string> other_versions(const Json& services, std::string_view id);

}  // namespace hostkeeper::proto
