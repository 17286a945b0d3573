#include "helper/client/common_cli.hpp"

#include "helper/client/exit_codes.hpp"

namespace hostkeeper::helper::client {

void CommonOptions::add_to(CLI::App& app, const std::string& timeout_help) {
    app.add_option("--socket", socket,
                   "hostkeeperd's socket (default: $HOSTKEEPER_SOCKET, else "
                   "/run/user/UID/hostkeeper/socket when yours, else "
                   "$XDG_RUNTIME_DIR/hostkeeper/socket)");
    app.add_option("--timeout", timeout_seconds, timeout_help)
        ->check(CLI::Range(0.001, 86400.0))
        ->capture_default_str();
}

ClientOptions CommonOptions::client_options() const {
    return make_client_options(socket, timeout_seconds);
}

std::optional<int> parse_or_exit(CLI::App& app, int argc, char** argv) {
    try {
        app.parse(argc, argv);
    } catch (const CLI::ParseError& e) {
        return app.exit(e) == 0 ? kExitOk : kExitUsage;
    }
    return std::nullopt;
}

std::string duration_text(long long seconds) {
    std::string text;
    if (seconds >= 86400) text += std::to_string(seconds / 86400) + "d";
    if (seconds >= 3600) text += std::to_string(seconds / 3600 % 24) + "h";
    if (seconds >= 60) text += std::to_string(seconds / 60 % 60) + "m";
    return text + std::to_string(seconds % 60) + "s";
}

}  // namespace hostkeeper::helper::client
