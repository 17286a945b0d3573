#include "helper/cli/fleet_status.hpp"

#include "helper/cli/answer_text.hpp"

namespace hostkeeper::helper::cli {

namespace {

const proto::Json* fleet_of(const proto::Json& cache) {
    const auto fleet = cache.find("fleet");
    return fleet != cache.end() && fleet->is_object() ? &*fleet : nullptr;
}

std::string count(const proto::Json& fleet, const char* key) {
    return std::to_string(fleet.value(key, 0LL));
}

}  // namespace

std::string fleet_status_line(const proto::Json& cache) {
    const proto::Json* fleet = fleet_of(cache);
    if (fleet == nullptr) return {};
    std::string line = "fleet tier: " + text_of(*fleet, "address", "?") +
                       (fleet->value("push", true) ? "" : " (read only)") + ", " +
                       count(*fleet, "hits") + " hits, " + count(*fleet, "misses") + " misses, " +
                       count(*fleet, "pushes") + " writes (" + count(*fleet, "present") +
                       " already there, " + count(*fleet, "in_flight") + " in flight), " +
                       count(*fleet, "refusals") + " refused, " + count(*fleet, "failures") +
                       " failures, " + count(*fleet, "bytes_in") + " bytes in, " +
                       count(*fleet, "bytes_out") + " bytes out";
    if (const std::string problem = text_of(*fleet, "problem", ""); !problem.empty())
        line += "; " + problem;
    return line;
}

void check_fleet(const DoctorSink& report, const proto::Json& cache) {
    const proto::Json* fleet = fleet_of(cache);
    if (fleet == nullptr) return;
    const std::string address = text_of(*fleet, "address", "?");
    if (const std::string problem = text_of(*fleet, "problem", ""); !problem.empty()) {
        report.warn("fleet tier " + address + ": " + problem);
        return;
    }
    report.ok("fleet tier " + address + ": " + count(*fleet, "hits") + " hits, " +
              count(*fleet, "pushes") + " writes, no failure since it last worked");
}

}  // namespace hostkeeper::helper::cli
