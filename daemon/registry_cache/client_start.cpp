#include "daemon/registry_cache/client_start.hpp"

#include <unistd.h>

#include <exception>
#include <string>
#include <vector>

#include "proto/file_io.hpp"

namespace hostkeeper::daemon::registry_cache {

// When `pid`'s parent started (wall clock, seconds), from /proc; nullopt when unknown.
std::optional<double> parent_start_time(pid_t pid) {
    const auto stat_fields = [](pid_t p) -> std::vector<std::string> {
        const std::optional<std::string> text =
            proto::read_file_if_exists("/proc/" + std::to_string(p) + "/stat", 4096);
        std::vector<std::string> fields;
        if (!text) return fields;
        const auto paren = text->rfind(')');  // the command may hold spaces and parentheses
        if (paren == std::string::npos) return fields;
        std::size_t at = paren + 2;
        while (at < text->size()) {
            const auto space = text->find(' ', at);
            fields.push_back(text->substr(at, space - at));
            if (space == std::string::npos) break;
            at = space + 1;
        }
        return fields;  // fields[0] is field 3 (state)
    };
    try {
        const std::vector<std::string> own = stat_fields(pid);
        if (own.size() < 2) return std::nullopt;
        const std::vector<std::string> parent = stat_fields(static_cast<pid_t>(std::stol(own[1])));
        if (parent.size() < 20) return std::nullopt;
        const double ticks = std::stod(parent[19]);  // field 22, starttime
        const std::optional<std::string> stat = proto::read_file_if_exists("/proc/stat", 1 << 20);
        if (!stat) return std::nullopt;
        const auto btime = stat->find("\nbtime ");
        if (btime == std::string::npos) return std::nullopt;
        const double boot = std::stod(stat->substr(btime + 7));
        return boot + ticks / static_cast<double>(::sysconf(_SC_CLK_TCK));
    } catch (const std::exception&) {
        return std::nullopt;
    }
}

}  // namespace hostkeeper::daemon::registry_cache
