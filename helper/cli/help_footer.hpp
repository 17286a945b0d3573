#pragma once
// hostkeeper --help's epilogue: the exit codes of helper/client/exit_codes.hpp
// in a sentence (docs/manual/exit-codes.md has them in full);
// tests/unit/packaging/test_exit_codes_documented.cpp checks it names every
// one of them and no other.

namespace hostkeeper::helper::cli {

inline constexpr const char* kHelpFooter =
    "Exit codes: 0 ok, 1 the daemon, keyring, discovery or registry failed, 2 bad arguments, 3 "
    "the host "
    "lacks the service or the registry lacks the module, provider, version or package, or "
    "no credentials are stored for the host (rotate: or it offers no tfe.v2), 4 no daemon, 5 timed "
    "out, 6 the daemon stayed "
    "busy, 7 check, rotate: a host rejected its token; exec: COMMAND's own status, 126/127 when it "
    "cannot be run.";

}  // namespace hostkeeper::helper::cli
