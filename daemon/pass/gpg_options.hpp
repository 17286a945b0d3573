#pragma once
// $PASSWORD_STORE_GPG_OPTS, which pass puts on every gpg command line, read
// for what GPGME can say: --armor (-a), --trust-model M (or =M),
// --always-trust and --homedir D (or =D). Anything else cannot be passed
// through GPGME; it is listed in `ignored` so that the daemon's log and
// doctor can say so (such options belong in gpg.conf, which gpg reads for
// GPGME as for pass).

#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace hostkeeper::daemon::pass {

struct GpgOptions {
    bool armor = false;
    std::optional<std::string> trust_model;
    std::optional<std::string> homedir;
    std::vector<std::string> ignored;
};

// Words split on blanks, as bash splits the unquoted variable.
GpgOptions parse_gpg_options(std::string_view text);

}  // namespace hostkeeper::daemon::pass
