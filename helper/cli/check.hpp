#pragma once
// hostkeeper check [HOST...] [--json]: is each host's stored token still
// good? The daemon's `check` per host (all stored hosts when none is named):
// valid (the user name), rejected (expired or revoked: run terraform login
// HOST), accepted, not checked (the host serves Terraform no discovery
// document to the token), no credentials, or failed (why). Exit 0 when none was
// rejected or failed; 7 (kExitRejected) when a host refused its token; else
// 1 when one could not be checked. Doctor prints the same verdicts.

#include <string>
#include <vector>

#include "helper/client/daemon_client.hpp"
#include "proto/messages.hpp"

namespace hostkeeper::helper::cli {

// The daemon's `check` answer for `host` (normalized); a daemon error for
// that host (keyring locked, timeout...) becomes {"host", "result":
// "failed", "error": CODE, "message"}. An unknown_op, unsupported_version or
// connection failure is thrown: no host can be checked.
proto::Json check_host(const client::ClientOptions& client, const std::string& host);

enum class Verdict { good, unchecked, absent, rejected, failed };

struct CheckLine {
    Verdict verdict = Verdict::failed;
    std::string text;  // "HOST: valid (user alice)", ...
};

// One answer (check_host's) for people.
CheckLine check_line(const proto::Json& answer);

int run_check(const client::ClientOptions& client, const std::vector<std::string>& hosts,
              bool json);

}  // namespace hostkeeper::helper::cli
