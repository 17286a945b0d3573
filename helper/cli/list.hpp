#pragma once
// hostkeeper list [--json]: every host with stored credentials (the daemon's
// `list`, read from the keyring): its Unicode and ASCII form, the backend,
// the item's label, when it was stored, the names of its fields (never their
// values), whether it is locked, its token's expiry and whether the token is
// withheld (refused, expired), the TF_TOKEN_* name `exec` gives it, and what
// shadows it for Terraform and OpenTofu (TF_TOKEN_* variables, credentials
// blocks, credentials.tfrc.json); then the Docker credentials and the hosts
// that recently refused their token.

#include <string>
#include <vector>

#include "helper/client/daemon_client.hpp"
#include "proto/messages.hpp"

namespace hostkeeper::helper::cli {

// The daemon's `list` answer.
proto::Json list_answer(const client::ClientOptions& client);

// The hosts of a `list` answer, as listed (normalized, sorted).
std::vector<std::string> listed_hosts(const proto::Json& answer);

// "bücher.example.com (xn--bcher-kva.example.com)", or the host alone when
// both forms are the same.
std::string host_for_people(const std::string& host);

// The document `list --json` prints: the answer's hosts with "display",
// "token_variable" (null when the host cannot be encoded) and "shadowed_by"
// added, its docker, git, rejected and commands (token_command hosts)
// entries, and "warnings" (files that could not be read).
proto::Json list_document(const proto::Json& answer);

// The warning for a host's stored expiry (a list host entry or a status
// "expiries" entry: "host", "expires_at", "expires_in_s", "expiry_stage"):
// "" while it is more than 30 days off.
std::string expiry_warning(const proto::Json& entry);

// list_document for people, one line per host (and per shadow under it).
std::vector<std::string> list_lines(const proto::Json& document);

int run_list(const client::ClientOptions& client, bool json);

}  // namespace hostkeeper::helper::cli
