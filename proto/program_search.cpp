#include "proto/program_search.hpp"

#include <unistd.h>

#include <cstdlib>
#include <system_error>

namespace hostkeeper::proto {
namespace fs = std::filesystem;

namespace {

bool executable_file(const fs::path& candidate) {
    std::error_code ec;
    return fs::is_regular_file(candidate, ec) && ::access(candidate.c_str(), X_OK) == 0;
}

}  // namespace

std::optional<fs::path> find_program(std::string_view name, std::string_view search_path,
                                     bool absolute_only) {
    if (name.empty()) return std::nullopt;
    if (name.find('/') != std::string_view::npos) {
        const fs::path program(name);
        if (absolute_only && program.is_relative()) return std::nullopt;
        return executable_file(program) ? std::optional<fs::path>(program) : std::nullopt;
    }
    while (true) {
        const auto colon = search_path.find(':');
        const fs::path dir(search_path.substr(0, colon));
        if (!(absolute_only && dir.is_relative())) {
            const fs::path candidate = (dir.empty() ? fs::path(".") : dir) / name;
            if (executable_file(candidate)) return candidate;
        }
        if (colon == std::string_view::npos) return std::nullopt;
        search_path.remove_prefix(colon + 1);
    }
}

std::optional<fs::path> find_program_on_path(std::string_view name, bool absolute_only) {
    const char* path = std::getenv("PATH");
    return find_program(name, path != nullptr ? path : "/usr/local/bin:/usr/bin:/bin",
                        absolute_only);
}

}  // namespace hostkeeper::proto
