#pragma once
// Exit codes of terraform-credentials-hostkeeper and hostkeeper (docs/manual/exit-codes.md).

#include "proto/error.hpp"

namespace hostkeeper::helper::client {

inline constexpr int kExitOk = 0;
inline constexpr int kExitFailed = 1;  // the daemon or the keyring reported an error
inline constexpr int kExitUsage = 2;   // bad arguments or bad input (hostname, stdin)
inline constexpr int kExitNotFound =
    3;  // the host lacks the service; the registry has no such module, provider, version or package
inline constexpr int kExitNoDaemon =
    4;  // no daemon answered and none could be started, or none that can run
inline constexpr int kExitTimeout = 5;  // the call did not finish within --timeout
inline constexpr int kExitBusy = 6;     // the daemon stayed at its connection limit until --timeout
inline constexpr int kExitRejected =
    7;  // hostkeeper check, rotate: a host refused its stored token
// hostkeeper exec: its own failures use the codes above; a COMMAND that
// cannot be run is 127 (not found) or 126 (found, not executable), as env(1).
inline constexpr int kExitCannotExecute = 126;
inline constexpr int kExitCommandNotFound = 127;

inline int exit_code_for(proto::ErrorCode code) {
    using proto::ErrorCode;
    switch (code) {
        case ErrorCode::bad_host:
        case ErrorCode::bad_request:
        case ErrorCode::too_large:
            return kExitUsage;
        case ErrorCode::timeout:
            return kExitTimeout;
        case ErrorCode::not_found:
        case ErrorCode::unsupported_service:
            return kExitNotFound;
        case ErrorCode::busy:
            return kExitBusy;
        case ErrorCode::forbidden:
        case ErrorCode::config_error:
            return kExitNoDaemon;
        default:
            return kExitFailed;
    }
}

}  // namespace hostkeeper::helper::client
