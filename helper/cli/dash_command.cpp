#include "helper/cli/dash_command.hpp"

#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <optional>
#include <sstream>
#include <string_view>
#include <system_error>

namespace hostkeeper::helper::cli {
namespace fs = std::filesystem;

namespace {

// Where execvp would find `name`.
std::optional<fs::path> locate(const std::string& name) {
    if (name.empty()) return std::nullopt;
    if (name.find('/') != std::string::npos) return fs::path(name);
    const char* path = std::getenv("PATH");
    std::stringstream dirs(path != nullptr ? path : "/usr/local/bin:/usr/bin:/bin");
    std::string dir;
    while (std::getline(dirs, dir, ':')) {
        const fs::path candidate = fs::path(dir.empty() ? "." : dir) / name;
        std::error_code ec;
        if (fs::is_regular_file(candidate, ec) && ::access(candidate.c_str(), X_OK) == 0)
            return candidate;
    }
    return std::nullopt;
}

bool is_dash(const fs::path& program) {
    std::error_code ec;
    const fs::path real = fs::canonical(program, ec);
    return !ec && real.filename() == "dash";
}

// The interpreter a "#!" line names: "/bin/sh", or X of "/usr/bin/env X".
std::optional<std::string> interpreter_of(const fs::path& file) {
    std::ifstream in(file, std::ios::binary);
    std::string line;
    if (!in || !std::getline(in, line) || line.rfind("#!", 0) != 0) return std::nullopt;
    std::istringstream words(line.substr(2));
    std::string first;
    std::string second;
    words >> first >> second;
    if (fs::path(first).filename() == "env" && !second.empty() && second[0] != '-') return second;
    if (first.empty()) return std::nullopt;
    return first;
}

}  // namespace

bool runs_under_dash(const std::string& command) {
    const std::optional<fs::path> program = locate(command);
    if (!program) return false;
    if (is_dash(*program)) return true;
    const std::optional<std::string> interpreter = interpreter_of(*program);
    if (!interpreter) return false;
    const std::optional<fs::path> found = locate(*interpreter);
    return found && is_dash(*found);
}

}  // namespace hostkeeper::helper::cli
