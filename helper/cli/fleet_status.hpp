#pragma once
// What `hostkeeper status` and `hostkeeper doctor` say of the fleet tier
// (registry_cache.fleet): its address, hits, misses, writes, refusals and
// bytes, and its last problem with the fix hostkeeperd gave.

#include <string>

#include "helper/cli/doctor_sink.hpp"
#include "proto/json.hpp"

namespace hostkeeper::helper::cli {

// One line from the registry_cache object's `fleet` (PROTOCOL.md); "" when
// no fleet tier is set.
std::string fleet_status_line(const proto::Json& cache);

// doctor: the tier works (ok), or its problem (a warning: archives still
// come from upstream). Nothing when no fleet tier is set.
void check_fleet(const DoctorSink& report, const proto::Json& cache);

}  // namespace hostkeeper::helper::cli
