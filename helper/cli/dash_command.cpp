#include "helper/cli/dash_command.hpp"

#include <filesystem>
#include <fstream>
#include <optional>
#include <sstream>
#include <string_view>
#include <system_error>

#include "proto/program_search.hpp"

namespace hostkeeper::helper::cli {
namespace fs = std::filesystem;

namespace {

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
    const std::optional<fs::path> program = proto::find_program_on_path(command);
    if (!program) return false;
    if (is_dash(*program)) return true;
    const std::optional<std::string> interpreter = interpreter_of(*program);
    if (!interpreter) return false;
    const std::optional<fs::path> found = proto::find_program_on_path(*interpreter);
    return found && is_dash(*found);
}

}  // namespace hostkeeper::helper::cli
