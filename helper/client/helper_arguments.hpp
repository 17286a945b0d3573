#pragma once
// The credentials helper's command line, `[--socket PATH] [--timeout SECONDS]
// get|store|forget HOST`, read by hand rather than with CLI11: CLI11 brings
// iostreams, whose static initialisation (the standard streams and every
// locale facet) was a large part of what the helper cost before main(). The
// rules, messages and exit codes are CLI11's, as the helper had them when it
// used CLI11 (tests/unit/test_helper_helper_arguments.cpp pins them).

#include <string>
#include <vector>

namespace hostkeeper::helper::client {

struct HelperArguments {
    enum class Action {
        run,      // verb and host given, options valid
        help,     // print helper_help() on stdout, exit 0
        version,  // print "PROGRAM VERSION" on stdout, exit 0
        usage,    // print `error` and helper_usage_hint() on stderr, exit 2
    };
    Action action = Action::run;
    std::string verb;    // get, store or forget
    std::string host;    // as given: normalized later
    std::string socket;  // "" for the default location
    double timeout_seconds = 30;
    std::string error;  // for Action::usage: CLI11's wording
};

// argv without the program name.
HelperArguments parse_helper_arguments(const std::vector<std::string>& args);

// --help's text, as CLI11 formatted it.
const char* helper_help();

// The line after a usage error.
const char* helper_usage_hint();

}  // namespace hostkeeper::helper::client
