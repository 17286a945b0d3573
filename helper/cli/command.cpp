#include "helper/cli/command.hpp"

#include <array>

namespace hostkeeper::helper::cli {

std::vector<std::unique_ptr<Command>> commands() {
    using Make = std::unique_ptr<Command> (*)();
    static constexpr std::array<Make, 18> kTable = {
        status_command, flush_command,    start_command, stop_command,   discover_command,
        module_command, provider_command, setup_command, import_command, doctor_command,
        unlock_command, migrate_command,  list_command,  check_command,  rotate_command,
        login_command,  exec_command,     token_command,
    };
    std::vector<std::unique_ptr<Command>> out;
    out.reserve(kTable.size());
    for (const Make make : kTable) out.push_back(make());
    return out;
}

}  // namespace hostkeeper::helper::cli
