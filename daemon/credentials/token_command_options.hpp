#pragma once
// Settings of the hosts whose token comes from a command (config.toml's
// [hosts."HOST"] token_command, token_ttl, token_command_timeout,
// token_username).

#include <chrono>
#include <map>
#include <string>
#include <vector>

namespace hostkeeper::daemon::credentials {

struct TokenCommand {
    std::vector<std::string> argv;  // run as it is: no shell; argv[0] searched in PATH
    std::chrono::seconds ttl{600};  // the lifetime of a token whose output gives none
    std::chrono::seconds timeout{60};
    std::string input;  // its standard input ("": /dev/null)
    // The user name a registry expects with the token where it asks for one
    // (the Docker credential helper's answer, the fleet tier's OCI
    // registry); "": none given.
    std::string username;
};

struct TokenCommandOptions {
    std::map<std::string, TokenCommand> hosts;  // by normalized host
    // Not empty: why no command is run (config.toml may be written by
    // another user); a get for one of `hosts` answers this.
    std::string refused;
};

}  // namespace hostkeeper::daemon::credentials
