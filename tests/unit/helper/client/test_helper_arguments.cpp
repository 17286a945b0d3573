// The credentials helper's hand-written argument parser against CLI11 as the
// helper used it before (the oracle below is that definition, with the
// --socket and --timeout options the command line still adds with CLI11):
// same action, same values, same messages, same help text.
#include <catch2/catch.hpp>
#include <cmath>
#include <sstream>
#include <string>
#include <vector>

#include "helper/client/common_cli.hpp"
#include "helper/client/helper_arguments.hpp"
#include "proto/version.hpp"

namespace test_helper_arguments {

using hostkeeper::helper::client::CommonOptions;
using hostkeeper::helper::client::HelperArguments;
using hostkeeper::helper::client::parse_helper_arguments;
using Action = HelperArguments::Action;
using Args = std::vector<std::string>;

namespace {

const std::string kProgram = "terraform-credentials-hostkeeper";

struct Outcome {
    Action action = Action::run;
    std::string out;  // help or version text
    std::string err;  // usage error, hint included
    std::string verb, host, socket;
    double timeout_seconds = 0;
};

// What the helper's CLI11 definition made of `args`.
Outcome cli11(const Args& args) {
    CLI::App app{
        "Terraform and OpenTofu credentials helper: keeps tokens in the OS keyring through "
        "hostkeeperd.",
        kProgram};
    CommonOptions common;
    common.add_to(app, "give up after this many seconds, start-up and unlock prompts included");
    std::string verb;
    std::string host;
    app.add_option("verb", verb, "get, store or forget")
        ->required()
        ->check(CLI::IsMember({"get", "store", "forget"}));
    app.add_option("host", host,
                   "the registry hostname, as Terraform gives it (e.g. app.terraform.io)")
        ->required();
    app.set_version_flag("--version", kProgram + " " + hostkeeper::proto::product_version());
    app.footer(
        "get prints the host's credentials object ({} when there is none); store reads one from "
        "standard "
        "input; forget removes it.\n"
        "Exit codes: 0 ok, 1 the daemon or keyring failed, 2 bad arguments or input, 4 no daemon, "
        "5 timed out.");
    Outcome outcome;
    Args reversed(args.rbegin(), args.rend());  // CLI11 takes them last first
    try {
        app.parse(reversed);
    } catch (const CLI::ParseError& e) {
        std::ostringstream out;
        std::ostringstream err;
        const int code = app.exit(e, out, err);
        outcome.out = out.str();
        outcome.err = err.str();
        if (code != 0) {
            outcome.action = Action::usage;
        } else {
            outcome.action =
                outcome.out.rfind(kProgram + " ", 0) == 0 ? Action::version : Action::help;
        }
        return outcome;
    }
    outcome.verb = verb;
    outcome.host = host;
    outcome.socket = common.socket;
    outcome.timeout_seconds = common.timeout_seconds;
    return outcome;
}

Outcome by_hand(const Args& args) {
    const HelperArguments parsed = parse_helper_arguments(args);
    Outcome outcome;
    outcome.action = parsed.action;
    switch (parsed.action) {
        case Action::help:
            outcome.out = hostkeeper::helper::client::helper_help();
            break;
        case Action::version:
            outcome.out = kProgram + " " + hostkeeper::proto::product_version() + "\n";
            break;
        case Action::usage:
            outcome.err = parsed.error + "\n" + hostkeeper::helper::client::helper_usage_hint();
            break;
        case Action::run:
            outcome.verb = parsed.verb;
            outcome.host = parsed.host;
            outcome.socket = parsed.socket;
            outcome.timeout_seconds = parsed.timeout_seconds;
            break;
    }
    return outcome;
}

}  // namespace

TEST_CASE("the helper's arguments are read as CLI11 read them", "[helper][arguments]") {
    const Args args = GENERATE(values<Args>({
        // As Terraform runs it, with and without configured options.
        {"get", "app.terraform.io"},
        {"store", "app.terraform.io"},
        {"forget", "tfe.corp.example:8443"},
        {"--socket=/run/s", "--timeout=1", "get", "h.example"},
        {"--socket", "/run/s", "--timeout", "0.5", "get", "h.example"},
        {"get", "h.example", "--socket", "/run/s"},
        {"--", "get", "h.example"},
        {"get", "--", "-a"},
        {"--socket", "-x", "get", "h.example"},
        {"--socket=/a=b", "get", "h.example"},
        {"--socket=", "/run/s", "get", "h.example"},
        {"--timeout=0x10", "get", "h.example"},
        {"--timeout=0.001", "get", "h.example"},
        {"--timeout=86400", "get", "h.example"},
        {"get", "-"},
        {"get", ""},
        // Help and version, wherever they are.
        {"--help"},
        {"-h"},
        {"-h", "get"},
        {"get", "h.example", "--help"},
        {"--help", "--no-such"},
        {"-hx", "get", "h.example"},
        {"--help=false", "get", "h.example"},
        {"--version"},
        {"--version", "get", "h.example"},
        {"--help", "--version"},
        {"--version", "--help"},
        // Usage errors.
        {},
        {"get"},
        {"list", "app.terraform.io"},
        {"GET", "h.example"},
        {"-", "get"},
        {"", "get"},
        {"get", "h.example", "b.example"},
        {"get", "h.example", "b", "c"},
        {"--x", "get", "h.example", "b"},
        {"get", "h.example", "b", "--x"},
        {"--no-such-flag", "get", "h.example"},
        {"-x", "get", "h.example"},
        {"--Socket=/x", "get", "h.example"},
        {"get", "-a"},
        {"--timeout=soon", "get", "h.example"},
        {"--timeout=0", "get", "h.example"},
        {"--timeout", "0.0001", "get", "h.example"},
        {"--timeout", "1e400", "get", "h.example"},
        {"--timeout=86400.001", "get", "h.example"},
        {"--timeout=", "get", "h.example"},
        {"--timeout", "--socket=/x", "get", "h.example"},
        {"--timeout"},
        {"--socket"},
        {"--socket="},
        {"get", "h.example", "--socket"},
        {"--socket=", "get", "h.example"},
        {"--socket=/x", "--socket=/y", "get", "h.example"},
        {"--timeout", "5", "--timeout", "6", "get", "h.example"},
        {"--socket=/x", "--timeout=1", "--timeout=2", "--socket=/y", "get", "h.example"},
        {"--timeout=soon", "--help"},
        {"--version", "list", "h.example"},
        {"--socket=/s", "--", "--help", "h.example"},
    }));
    CAPTURE(args);
    const Outcome expected = cli11(args);
    const Outcome got = by_hand(args);
    CHECK(got.action == expected.action);
    CHECK(got.out == expected.out);
    CHECK(got.err == expected.err);
    CHECK(got.verb == expected.verb);
    CHECK(got.host == expected.host);
    CHECK(got.socket == expected.socket);
    CHECK(got.timeout_seconds == expected.timeout_seconds);
}

TEST_CASE("a timeout that is not a number is refused, NaN included", "[helper][arguments]") {
    // CLI11's Range let "nan" through (every comparison with NaN is false),
    // and the helper then gave up at once with a garbage timeout.
    for (const char* text : {"--timeout=nan", "--timeout=-nan", "--timeout=NAN"}) {
        CAPTURE(text);
        const HelperArguments parsed = parse_helper_arguments({text, "get", "h.example"});
        CHECK(parsed.action == Action::usage);
        CHECK(parsed.error.find("not in range 0.001000 to 86400.000000") != std::string::npos);
    }
    const HelperArguments inf = parse_helper_arguments({"--timeout=inf", "get", "h.example"});
    CHECK(inf.action == Action::usage);
    CHECK(std::isfinite(parse_helper_arguments({"get", "h.example"}).timeout_seconds));
}

}  // namespace test_helper_arguments
