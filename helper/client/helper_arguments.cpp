#include "helper/client/helper_arguments.hpp"

#include <cstdlib>
#include <optional>
#include <string_view>
#include <utility>

namespace hostkeeper::helper::client {
namespace {

constexpr double kMinTimeout = 0.001;
constexpr double kMaxTimeout = 86400;

// An option that takes one value: `--name=VALUE`, or `--name` (also `--name=`)
// followed by the next argument, whatever it looks like, as CLI11 takes it.
struct ValueOption {
    std::string_view name;
    std::string_view type;  // in "1 required TYPE missing"
    std::optional<std::string> value;
    int count = 0;
};

// CLI11's Range(0.001, 86400.0) on the text: strtold over the whole of it.
bool valid_timeout(const std::string& text, double& seconds) {
    if (text.empty()) return false;
    char* end = nullptr;
    const long double value = std::strtold(text.c_str(), &end);
    if (end != text.c_str() + text.size()) return false;
    seconds = static_cast<double>(value);
    return seconds >= kMinTimeout && seconds <= kMaxTimeout;  // false for NaN too
}

HelperArguments usage(std::string error) {
    HelperArguments out;
    out.action = HelperArguments::Action::usage;
    out.error = std::move(error);
    return out;
}

// The arguments as read, before any is checked.
struct ReadArguments {
    ValueOption socket{"--socket", "TEXT", {}, 0};
    ValueOption timeout{"--timeout", "FLOAT:FLOAT in [0.001 - 86400]", {}, 0};
    std::vector<std::string> positionals;
    std::vector<std::string> extras;
    bool help = false;
    bool version = false;
};

enum class OptionRead { other, taken, value_missing };

// args[i] as `option`: its value taken, from args[i] or the next argument
// (`i` then moves past it).
OptionRead read_value_option(ValueOption& option, const std::vector<std::string>& args,
                             std::size_t& i) {
    const std::string_view view(args[i]);
    if (view.substr(0, option.name.size()) != option.name) return OptionRead::other;
    const std::string_view rest = view.substr(option.name.size());
    if (!rest.empty() && rest.front() != '=') return OptionRead::other;
    ++option.count;
    if (rest.size() > 1) {
        option.value = std::string(rest.substr(1));
    } else if (i + 1 < args.size()) {
        option.value = args[++i];
    } else {
        return OptionRead::value_missing;
    }
    return OptionRead::taken;
}

// Left to right, as CLI11 reads them; a missing value is an error at once
// (its message returned).
std::optional<std::string> read_arguments(const std::vector<std::string>& args,
                                          ReadArguments& read) {
    bool options_ended = false;
    for (std::size_t i = 0; i < args.size(); ++i) {
        const std::string& arg = args[i];
        if (options_ended || arg == "-" || arg.empty() || arg.front() != '-') {
            (read.positionals.size() < 2 ? read.positionals : read.extras).push_back(arg);
            continue;
        }
        if (arg == "--") {
            options_ended = true;
            continue;
        }
        // CLI11 also reads -h in a group of short flags (-hx) and --help=VALUE.
        if (arg.rfind("-h", 0) == 0 || arg == "--help" || arg.rfind("--help=", 0) == 0) {
            read.help = true;
            continue;
        }
        if (arg == "--version") {
            read.version = true;
            continue;
        }
        bool matched = false;
        for (ValueOption* option : {&read.socket, &read.timeout}) {
            const OptionRead result = read_value_option(*option, args, i);
            if (result == OptionRead::other) continue;
            if (result == OptionRead::value_missing) {
                return std::string(option->name) + ": 1 required " + std::string(option->type) +
                       " missing";
            }
            matched = true;
            break;
        }
        if (!matched) read.extras.push_back(arg);
    }
    return std::nullopt;
}

// CLI11's message for the arguments nothing took: it names them last first.
std::string not_expected(const std::vector<std::string>& extras) {
    std::string list;
    for (auto it = extras.rbegin(); it != extras.rend(); ++it)
        list += (list.empty() ? "" : " ") + *it;
    return std::string("The following argument") + (extras.size() == 1 ? " was" : "s were") +
           " not expected: " + list;
}

// In the order CLI11 checks them: each option's count and value, the verb's
// value, --version, --help, the required positionals, the rest.
HelperArguments checked_arguments(const ReadArguments& read) {
    for (const ValueOption* option : {&read.socket, &read.timeout}) {
        if (option->count > 1) {
            return usage(std::string(option->name) + ": At Most 1 required but received " +
                         std::to_string(option->count));
        }
    }
    HelperArguments out;
    if (read.socket.value) out.socket = *read.socket.value;
    if (read.timeout.value && !valid_timeout(*read.timeout.value, out.timeout_seconds)) {
        return usage("--timeout: Value " + *read.timeout.value +
                     " not in range 0.001000 to 86400.000000");
    }
    if (!read.positionals.empty()) {
        out.verb = read.positionals[0];
        if (out.verb != "get" && out.verb != "store" && out.verb != "forget") {
            return usage("verb: " + out.verb + " not in {get,store,forget}");
        }
    }
    if (read.version) {
        out.action = HelperArguments::Action::version;
        return out;
    }
    if (read.help) {
        out.action = HelperArguments::Action::help;
        return out;
    }
    if (read.positionals.empty()) return usage("verb is required");
    if (read.positionals.size() < 2) return usage("host is required");
    out.host = read.positionals[1];
    if (!read.extras.empty()) return usage(not_expected(read.extras));
    return out;
}

}  // namespace

HelperArguments parse_helper_arguments(const std::vector<std::string>& args) {
    ReadArguments read;
    if (std::optional<std::string> error = read_arguments(args, read)) {
        return usage(std::move(*error));
    }
    return checked_arguments(read);
}

const char* helper_help() {
    return "Terraform and OpenTofu credentials helper: keeps tokens in the OS keyring through "
           "hostkeeperd.\n"
           "Usage: terraform-credentials-hostkeeper [OPTIONS] verb host\n"
           "\n"
           "Positionals:\n"
           "  verb TEXT:{get,store,forget} REQUIRED\n"
           "                              get, store or forget\n"
           "  host TEXT REQUIRED          the registry hostname, as Terraform gives it (e.g. "
           "app.terraform.io)\n"
           "\n"
           "Options:\n"
           "  -h,--help                   Print this help message and exit\n"
           "  --socket TEXT               hostkeeperd's socket (default: $HOSTKEEPER_SOCKET, else "
           "/run/user/UID/hostkeeper/socket when yours, else $XDG_RUNTIME_DIR/hostkeeper/socket)\n"
           "  --timeout FLOAT:FLOAT in [0.001 - 86400]=30\n"
           "                              give up after this many seconds, start-up and unlock "
           "prompts included\n"
           "  --version                   Display program version information and exit\n"
           "\n"
           "get prints the host's credentials object ({} when there is none); store reads one from "
           "standard "
           "input; forget removes it.\n"
           "Exit codes: 0 ok, 1 the daemon or keyring failed, 2 bad arguments or input, 4 no "
           "daemon, 5 timed out.\n";
}

const char* helper_usage_hint() {
    return "Run with --help for more information.\n";
}

}  // namespace hostkeeper::helper::client
